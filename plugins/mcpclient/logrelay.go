package mcpclient

import (
	"context"
	"time"

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
	c.logged.Add(1)
}

// settleQuiet is how long no log message may arrive before a call whose
// caller relays them ends; settleMax bounds the wait.
const (
	settleQuiet = 2 * time.Millisecond
	settleMax   = 50 * time.Millisecond
)

// settleLogs holds a call that just got its answer, for a caller that
// relays log messages (tools.WithLog) from a server that logs, until the
// messages the server sent before its answer are relayed: go-sdk takes an
// answer at once but handles notifications on a queue, so a message sent
// right before the answer may be handled after it, when the caller's
// request (a gateway client's tools/call) has ended. It waits until none
// has arrived for settleQuiet, at most settleMax.
func (c *client) settleLogs(ctx context.Context, cn *conn, err error) {
	if err != nil || !cn.logs || !tools.WantsLog(ctx) {
		return
	}
	deadline := time.Now().Add(settleMax)
	for seen := c.logged.Load(); time.Now().Before(deadline); {
		time.Sleep(settleQuiet)
		now := c.logged.Load()
		if now == seen {
			return
		}
		seen = now
	}
}
