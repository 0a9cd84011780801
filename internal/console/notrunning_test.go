package console

import (
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// TestNotRunning: an unknown tool's answer names the instance that owns
// it by its claims (the serverName, not the entry id) when that one is not
// running, else every instance that failed or waits, and nothing when all
// run.
func TestNotRunning(t *testing.T) {
	st := []host.InstanceStatus{
		{ID: "clock", Plugin: "clock", State: host.StateFailed, Err: "apply: boom", Claims: []host.Claim{{Kind: "tool", Value: "clock_now"}}},
		{ID: "gh-entry", Plugin: "mcp-client", State: host.StatePending, Err: "waits for service tools",
			Claims: []host.Claim{{Kind: "serverName", Value: "github", ToolPrefix: "mcp__github__"}}},
		{ID: "off", Plugin: "greeter", State: host.StateDisabled, Claims: []host.Claim{{Kind: "tool", Value: "greet"}}},
		{ID: "hi", Plugin: "greeter", State: host.StateActive},
	}
	down := `not running: instance "clock" (clock) failed: apply: boom; instance "gh-entry" (mcp-client) is pending: waits for service tools`
	for tool, want := range map[string]string{
		"clock_now":         `instance "clock" (clock) failed: apply: boom`,
		"mcp__github__list": `instance "gh-entry" (mcp-client) is pending: waits for service tools`,
		"greet":             `instance "off" (greeter) is disabled`,
		// The entry id names no tool: the server is github.
		"mcp__gh-entry__list": down,
		"hi_there":            down,
		"clockwork":           down,
	} {
		if got := NotRunning(st, tool); got != want {
			t.Errorf("NotRunning(%s) = %q, want %q", tool, got, want)
		}
	}
	if got := NotRunning(st[3:], "nope"); got != "" {
		t.Errorf("every instance active: %q, want nothing", got)
	}
}
