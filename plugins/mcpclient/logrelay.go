package mcpclient

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// relayLog passes a server's log message to the callers of its calls in
// flight that relay logs (tools.WithLog: a gateway, to its client).
// notifications/message names no call, so every call running on the
// server when it arrives hears it.
func (c *client) relayLog(p *mcp.LoggingMessageParams) {
	c.mu.Lock()
	calls := make([]*inflight, 0, len(c.calls))
	for _, call := range c.calls {
		calls = append(calls, call)
	}
	c.mu.Unlock()
	if len(calls) == 0 {
		return
	}
	m := tools.LogMessage{Level: string(p.Level), Logger: p.Logger, Data: p.Data}
	for _, call := range calls {
		tools.ReportLog(call.ctx, m)
	}
}
