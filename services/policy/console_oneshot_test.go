package policy_test

import (
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestConsoleOneShotFoldedCall: a one-shot command's mcp_call approved
// at the console is one question, as at the terminal: the tool it
// reaches is not put to the console again.
func TestConsoleOneShotFoldedCall(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	h := hosttest.Start(t, counterComposition(fixture, `        - tools: ["mcp__fx__count", "mcp_call"]
          action: ask
`))
	con := attachConsole(t, askbroker.Once, askbroker.Once)
	call := tools.Call{Caller: tools.Caller{Kind: tools.CallerChat, ID: "p"}, Name: "mcp_call",
		Args: []byte(`{"tool":"mcp__fx__count","arguments":{}}`), Channels: &tools.Channels{OneShot: &tools.OneShot{}}}
	if res := h.Tools().Run(t.Context(), call); res.Err != nil {
		t.Fatalf("mcp_call approved once: %v", res.Err)
	}
	if asks := con.asked(); len(asks) != 1 || asks[0].Tool != "mcp_call" {
		t.Errorf("the console's asks: %+v; want mcp_call's alone", asks)
	}
}
