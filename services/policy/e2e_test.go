package policy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/mcptest"
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
