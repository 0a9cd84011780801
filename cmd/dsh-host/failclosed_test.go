package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestCallFailsClosed: `dsh-host call` with arguments meant to slip past
// a deny rule over a path (1e400, a list) is refused, saying why, with
// the exit code of a failure (services/policy's e2e counts what reaches
// the server).
func TestCallFailsClosed(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := fxOpPolicy(t, `        - tools: [mcp__fx__op]
          when: 'args.path.startsWith("/etc")'
          action: deny
`)
	call := func(args string) (int, string, string) {
		var out, errb strings.Builder
		code := dispatch(context.Background(), []string{"call", "-c", file, "--no-attach", "mcp__fx__op", args}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	for _, c := range []struct{ args, why string }{
		{`{"path":"/etc/passwd","pad":1e400}`, "denied by policy rule 1"},
		{`{"path":["/etc/passwd"]}`, "do not match its input schema at arguments.path"},
	} {
		if code, out, errOut := call(c.args); code != exitFail || !strings.Contains(errOut, c.why) {
			t.Errorf("%s: exit %d, %q %q; want a refusal saying %q", c.args, code, out, errOut, c.why)
		}
	}
	if code, out, errOut := call(`{"path":"/tmp/x"}`); code != exitOK || !strings.HasPrefix(out, "1 ") {
		t.Errorf("allowed: exit %d, %q %q; want the server's answer", code, out, errOut)
	}
}

// TestPolicyExplain: `dsh-host policy explain` prints each rule
// considered, why it matched or not, and the decision, for the caller and
// identity given.
func TestPolicyExplain(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := fxOpPolicy(t, `        - tools: [mcp__fx__op]
          callers: [gateway]
          when: '!("ops" in caller.groups)'
          action: deny
        - tools: [mcp__fx__op]
          when: 'args.path.startsWith("/etc")'
          action: deny
`)
	explain := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := dispatch(context.Background(), append([]string{"policy", "explain", "-c", file, "--no-attach"}, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	code, out, errOut := explain("mcp__fx__op", `{"path": ["/etc/passwd"]}`)
	for _, want := range []string{"caller call\n", "mcp__fx__op (server fx)", "no  rule 1 (composition.yml:9) (deny): callers gateway: the caller is call",
		"YES rule 2 (composition.yml:13) (deny): its when cannot be evaluated", "decided by rule 2 (composition.yml:13): deny"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	code, out, errOut = explain("--caller", "gateway", "--subject", "ada", "--group", "ops", "mcp__fx__op", `{"path":"/tmp"}`)
	for _, want := range []string{"caller gateway, subject ada, groups ops", `when !("ops" in caller.groups): false`, "default decides: allow"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	if code, _, errOut := explain("--caller", "robot", "mcp__fx__op"); code == exitOK || !strings.Contains(errOut, "callers are") {
		t.Errorf("--caller robot: exit %d, %q; want an error naming the callers", code, errOut)
	}
}

// TestCheckWarnsAboutRules: check warns, without failing, about rules
// that can match nothing (a server or tool of a server no entry
// provides, a name in the wrong case) or every call before other rules;
// an empty tools list fails it, naming the key.
func TestCheckWarnsAboutRules(t *testing.T) {
	file := writeComposition(t, `plugins:
  - id: fx
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: /bin/true}
  - id: policy
    name: policy
    config:
      rules:
        - servers: [FX]
          action: deny
        - tools: [mcp__FX__op, mcp__gh__*, mcp__fx__op, "mcp__*"]
          action: deny
        - servers: [nope]
          action: deny
        - action: ask
        - tools: [mcp__fx__*]
          action: allow
`)
	code, stdout, stderr := dshHost(t, "check", "-c", file)
	if code != exitOK || !strings.Contains(stdout, "ok, 2 entries") {
		t.Fatalf("check: exit %d, %q %q; want ok with warnings", code, stdout, stderr)
	}
	for _, want := range []string{
		`composition.yml:9: entry "policy": config key rules[0].servers[0]: "FX" matches no server, and the rule none of its tools: the serverName is "fx" (names are case-sensitive)`,
		`composition.yml:11: entry "policy": config key rules[1].tools[0]: "mcp__FX__op" matches no tool: server "fx" names its tools mcp__fx__…`,
		`config key rules[1].tools[1]: "mcp__gh__*" matches no tool: no entry provides server "gh" (its servers: fx)`,
		`config key rules[2].servers[0]: "nope" matches no server of this composition (its servers: fx)`,
		`composition.yml:15: entry "policy": config key rules[3]: this rule matches every call, so the 1 rule(s) after it never decide`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check's warnings lack %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "warning: "); n != 5 {
		t.Errorf("%d warnings, want 5:\n%s", n, stderr)
	}
	empty := writeComposition(t, "plugins:\n  - id: policy\n    name: policy\n    config:\n      rules:\n        - tools: []\n          action: deny\n")
	if code, _, stderr := dshHost(t, "check", "-c", empty); code != exitFail || !strings.Contains(stderr, `composition.yml:6: entry "policy": config key rules[0].tools: an empty tools would match every call`) {
		t.Errorf("tools: []: exit %d, %q; want an error naming the key", code, stderr)
	}
}

// fxOpPolicy writes a composition of the fixture's op tool behind a
// policy with rules, which start on its line 9.
func fxOpPolicy(t *testing.T, rules string) string {
	return writeComposition(t, fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q, args: [-op]}
  - id: policy
    name: policy
    config:
      rules:
%s`, mcptest.FixtureBinary(t), rules))
}
