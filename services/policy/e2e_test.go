package policy_test

import (
	"fmt"
	"strings"
	"testing"

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
