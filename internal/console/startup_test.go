package console

import (
	"bytes"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/golden"
)

// TestStartupGolden: run's lines while a composition starts, from a
// scripted sequence of status changes: a server connecting, a plugin
// starting, a failure, a lazy server and a built-in service left out, an
// entry the count did not know, then the summary.
func TestStartupGolden(t *testing.T) {
	server := []host.Claim{{Kind: "serverName", Value: "github", Key: "serverName", ToolPrefix: "mcp__github__"}}
	var out bytes.Buffer
	p := NewStartup(&out)
	for _, s := range []host.InstanceStatus{
		{ID: "github", Plugin: "mcp-client", State: host.StatePending, Claims: server},
		{ID: "hi", Plugin: "greeter", State: host.StatePending},
		{ID: "lazy", Plugin: "mcp-client", State: host.StatePending, Lazy: true},
		{ID: "off", Plugin: "greeter", State: host.StateDisabled},
		{ID: "tools", Plugin: "tools", State: host.StateStarting},
		{ID: "github", Plugin: "mcp-client", State: host.StateStarting, Claims: server},
		{ID: "github", Plugin: "mcp-client", State: host.StateStarting, Claims: server},
		{ID: "hi", Plugin: "greeter", State: host.StateStarting},
		{ID: "lazy", Plugin: "mcp-client", State: host.StateStarting, Lazy: true},
		{ID: "hi", Plugin: "greeter", State: host.StateFailed, Err: "greeting: want a word"},
		{ID: "late", Plugin: "greeter", State: host.StateStarting},
		{ID: "extra", Plugin: "greeter", State: host.StateStarting},
		{ID: "github", Plugin: "mcp-client", State: host.StateActive, Claims: server},
	} {
		p.Observe(s)
	}
	p.Finish([]host.InstanceStatus{{State: host.StateActive}, {State: host.StateActive}, {State: host.StateFailed}, {State: host.StateDisabled}}, " — /help for commands")
	p.Observe(host.InstanceStatus{ID: "after", Plugin: "greeter", State: host.StateFailed, Err: "not shown"})
	out.WriteString(Summary(nil) + "\n")
	golden.Check(t, "startup", out.Bytes(), *update)
}
