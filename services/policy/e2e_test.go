package policy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/tools"
)

// counterComposition runs the fixture with its count tool, the fold (so
// that mcp_call dispatches to it) and the policy with rules.
func counterComposition(fixture, rules string) string {
	return fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-counter]
  - id: fold
    name: mcp-fold
    config: {}
  - id: policy
    name: policy
    config:
      rules:
%s`, fixture, rules)
}

// TestDeniedCallsNeverReachTheServer: a denied call, direct or folded
// through mcp_call, is a refusal naming the rule and its line, and the
// server's count shows it never arrived.
func TestDeniedCallsNeverReachTheServer(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	h := hosttest.Start(t, counterComposition(fixture, `        - tools: ["mcp__fx__count"]
          action: deny
`))
	reg := h.Tools()
	call := func(name, args string) tools.Result {
		return reg.Execute(t.Context(), tools.Caller{Kind: tools.CallerConsole}, name, []byte(args))
	}
	for _, c := range [][2]string{{"mcp__fx__count", "{}"}, {"mcp_call", `{"tool":"mcp__fx__count","arguments":{}}`}} {
		res := call(c[0], c[1])
		text := hosttest.Text(res)
		if !strings.Contains(text, "denied by policy rule 1 (composition.yml:16)") {
			t.Errorf("%s: %q, want a denial naming rule 1 at composition.yml:16", c[0], text)
		}
	}
	// Allowed now: the first call the server sees is number 1.
	h.Apply(counterComposition(fixture, `        - tools: ["mcp__fx__count"]
          action: allow
`))
	if res := call("mcp__fx__count", "{}"); res.Err != nil || hosttest.Text(res) != "1" {
		t.Fatalf("allowed count = %q (%v), want 1: a denied call reached the server", hosttest.Text(res), res.Err)
	}
}

// TestDeniedToolsAreNotOffered: a tool the rules deny to every call of a
// caller kind is not in that caller's lists (nor mcp_list's); a deny that
// depends on the arguments, or an allow under a condition before it,
// leaves it listed; a call of a hidden tool is still refused by its rule.
func TestDeniedToolsAreNotOffered(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	h := hosttest.Start(t, counterComposition(fixture, `        - tools: ["mcp__fx__count"]
          callers: [gateway]
          action: deny
        - tools: ["mcp__fx__shout"]
          when: 'args.text == "x"'
          action: allow
        - tools: ["mcp__fx__shout", "mcp__fx__greet"]
          action: deny
        - tools: ["mcp__fx__add"]
          when: 'args.a == 1'
          action: deny
`))
	names := func(kind string) string {
		return strings.Join(h.Tools().Names(tools.Caller{Kind: kind}), " ") + " "
	}
	gateway, console := names(tools.CallerGateway), names(tools.CallerConsole)
	for _, c := range []struct {
		tool            string
		gateway, others bool
	}{
		{"mcp__fx__count", false, true},
		{"mcp__fx__greet", false, false},
		{"mcp__fx__shout", true, true},
		{"mcp__fx__add", true, true},
		{"mcp__fx__ping", true, true},
	} {
		if strings.Contains(gateway, c.tool+" ") != c.gateway || strings.Contains(console, c.tool+" ") != c.others {
			t.Errorf("%s offered to the gateway: %v, to the console: %v; want %v, %v", c.tool,
				strings.Contains(gateway, c.tool+" "), strings.Contains(console, c.tool+" "), c.gateway, c.others)
		}
	}
	list := hosttest.Text(h.Tools().Execute(t.Context(), tools.Caller{Kind: tools.CallerGateway}, "mcp_list", []byte(`{}`)))
	if strings.Contains(list, "mcp__fx__count") || !strings.Contains(list, "mcp__fx__ping") {
		t.Errorf("mcp_list for the gateway:\n%s\nwant ping and not count", list)
	}
	res := h.Tools().Execute(t.Context(), tools.Caller{Kind: tools.CallerGateway}, "mcp__fx__count", []byte(`{}`))
	if !strings.Contains(hosttest.Text(res), "denied by policy rule 1") {
		t.Errorf("a hidden tool's call: %q, want its rule's denial", hosttest.Text(res))
	}
}

// TestPolicyEditLeavesNoUnguardedMoment: while calls of a denied tool
// run back to back, edits of the policy entry (the deny stays, a rule
// around it changes) never let one through: the new rules are in force
// before the old ones leave. The server's count is the witness.
func TestPolicyEditLeavesNoUnguardedMoment(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	rules := func(i int) string {
		return fmt.Sprintf(`        - tools: ["mcp__fx__greet_%d"]
          action: allow
        - tools: ["mcp__fx__count"]
          action: deny
`, i)
	}
	h := hosttest.Start(t, counterComposition(fixture, rules(0)))
	reg := h.Tools()
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		calls := 0
		for {
			select {
			case <-stop:
				done <- calls
				return
			default:
			}
			reg.Execute(t.Context(), tools.Caller{Kind: tools.CallerConsole}, "mcp__fx__count", []byte("{}"))
			calls++
		}
	}()
	for i := 1; i <= 40; i++ {
		h.Apply(counterComposition(fixture, rules(i)))
	}
	close(stop)
	calls := <-done
	// Allowed now: the first call the server sees must be number 1.
	h.Apply(counterComposition(fixture, `        - tools: ["mcp__fx__count"]
          action: allow
`))
	// Until the replaced rules are disposed, a call meets both (the
	// stricter decides): wait for the allow, each try refused unsent.
	var res tools.Result
	mcptest.WaitFor(t, 10*time.Second, "the edit that allows count", func() bool {
		res = reg.Execute(t.Context(), tools.Caller{Kind: tools.CallerConsole}, "mcp__fx__count", []byte("{}"))
		return !strings.Contains(hosttest.Text(res), "denied by policy")
	})
	if res.Err != nil || hosttest.Text(res) != "1" {
		t.Fatalf("count after %d denied calls across 40 policy edits = %q (%v), want 1: denied calls reached the server", calls, hosttest.Text(res), res.Err)
	}
}

// opComposition runs the fixture's op tool (its server checks nothing)
// and the fold under a deny rule over its path.
func opComposition(fixture string) string {
	return fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-op]
  - id: fold
    name: mcp-fold
    config: {}
  - id: policy
    name: policy
    config:
      rules:
        - tools: [mcp__fx__op]
          when: 'args.path.startsWith("/etc")'
          action: deny
`, fixture)
}

// attackArgs are arguments meant to slip past `args.path.startsWith("/etc")
// → deny`: each is refused, by the rule or by the input schema.
var attackArgs = []string{
	`{"path":"/etc/passwd","pad":1e400}`,
	`{"path":"/etc/passwd","pad":-1e400}`,
	`{"path":["/etc/passwd"]}`,
	`{"path":{"toString":"/etc/passwd"}}`,
	`{"path":"/tmp/x","path":"/etc/passwd"}`,
	`{"path":"/etc/passwd","path":"/tmp/x"}`,
	`{"path":"/etc/passwd","pad":"\ud800"}`,
	"{\"path\":\"/etc/passwd\",\"x\":\"\xff\"}",
	`{"path":"/etc/passwd"} {"path":"/tmp"}`,
	`["/etc/passwd"]`,
	`{"pad":1}`,
}

// TestFailClosedCallsNeverReachTheServer: each attack, as a console, a
// one-shot call, a chat, a gateway's or through mcp_call, is refused,
// and the server's count shows that none arrived.
func TestFailClosedCallsNeverReachTheServer(t *testing.T) {
	h := hosttest.Start(t, opComposition(mcptest.FixtureBinary(t)))
	reg := h.Tools()
	for _, kind := range []string{tools.CallerConsole, tools.CallerCall, tools.CallerChat, tools.CallerGateway} {
		caller := tools.Caller{Kind: kind}
		for _, args := range attackArgs {
			res := reg.Execute(t.Context(), caller, "mcp__fx__op", []byte(args))
			if res.Err == nil {
				t.Errorf("%s %s: %q, want a refusal", kind, args, hosttest.Text(res))
			}
			folded, err := json.Marshal(map[string]any{"tool": "mcp__fx__op", "arguments": json.RawMessage(args)})
			if err != nil {
				// Not JSON at all: mcp_call cannot even carry it.
				continue
			}
			if res := reg.Execute(t.Context(), caller, "mcp_call", folded); !res.Failed && res.Err == nil {
				t.Errorf("%s mcp_call %s: %q, want a refusal", kind, args, hosttest.Text(res))
			}
		}
	}
	// The first call that reaches the server is this one.
	res := reg.Execute(t.Context(), tools.Caller{Kind: tools.CallerCall}, "mcp__fx__op", []byte(`{"path":"/tmp/x","pad":1e400}`))
	if got := hosttest.Text(res); res.Err != nil || !strings.HasPrefix(got, "1 ") {
		t.Fatalf("allowed op = %q (%v), want the server's first call: a refused call reached it", got, res.Err)
	}
	// The 1e400 reached the server as written.
	if got := hosttest.Text(res); !strings.Contains(got, "1e400") {
		t.Errorf("the server received %q, want the pad as written", got)
	}
}

// TestSchemaErrorsReachTheCaller: a call whose arguments do not match the
// input schema is refused with the schema's error, naming the key.
func TestSchemaErrorsReachTheCaller(t *testing.T) {
	h := hosttest.Start(t, opComposition(mcptest.FixtureBinary(t)))
	res := h.Tools().Execute(t.Context(), tools.Caller{Kind: tools.CallerConsole}, "mcp__fx__op", []byte(`{"path":"/tmp","pad":"wide"}`))
	if !errors.Is(res.Err, tools.ErrInvalidArguments) || !strings.Contains(res.Err.Error(), `arguments of "mcp__fx__op" do not match its input schema at arguments.pad: type`) {
		t.Fatalf("err = %v, want the schema's error at arguments.pad", res.Err)
	}
	res = h.Tools().Execute(t.Context(), tools.Caller{Kind: tools.CallerChat}, "mcp_call", []byte(`{"tool":"mcp__fx__op","arguments":{"pad":1}}`))
	if text := hosttest.Text(res); !res.Failed || !strings.Contains(text, `missing properties: ["path"]`) || !strings.Contains(text, "inputSchema") {
		t.Fatalf("mcp_call: %q, want the schema's error and the schema", text)
	}
}
