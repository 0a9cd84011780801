package main

import (
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// TestNotRunning: an unknown tool's answer names the instance its name
// derives from when that one is not running, else every instance that
// failed or waits, and nothing when all run.
func TestNotRunning(t *testing.T) {
	st := []host.InstanceStatus{
		{ID: "clock", Plugin: "clock", State: host.StateFailed, Err: "apply: boom"},
		{ID: "github", Plugin: "mcp-client", State: host.StatePending, Err: "waits for service tools"},
		{ID: "off", Plugin: "greeter", State: host.StateDisabled},
		{ID: "hi", Plugin: "greeter", State: host.StateActive},
	}
	for tool, want := range map[string]string{
		"clock_now":         `instance "clock" (clock) failed: apply: boom`,
		"mcp__github__list": `instance "github" (mcp-client) is pending: waits for service tools`,
		"off-greet":         `instance "off" (greeter) is disabled`,
		"hi_there":          `not running: instance "clock" (clock) failed: apply: boom; instance "github" (mcp-client) is pending: waits for service tools`,
		"clockwork":         `not running: instance "clock" (clock) failed: apply: boom; instance "github" (mcp-client) is pending: waits for service tools`,
	} {
		if got := notRunning(st, tool); got != want {
			t.Errorf("notRunning(%s) = %q, want %q", tool, got, want)
		}
	}
	if got := notRunning(st[3:], "nope"); got != "" {
		t.Errorf("every instance active: %q, want nothing", got)
	}
}
