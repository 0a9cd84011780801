package mcpclient

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A connection whose reader stopped (above all after a message over the
// frame limit, which go-sdk cannot skip) takes no call any more, but its
// session ends, and the supervisor hears of it, only once the server process
// has exited: a fraction of a second for a Go server, a second or more for a
// Python one. Until then every call sent on it fails at once with
// mcp.ErrConnectionClosed. So the first call to see that takes the
// connection out of use, and the calls that come meanwhile wait (as for a
// start) for the supervisor to settle: the new connection when it
// reconnects at once, as after an oversized message, or the outage's error.

// unsent reports whether a call on cn failed before its request reached the
// server (go-sdk refuses to send on a connection that is shutting down), so
// that sending it again cannot run the tool twice. Any failure of cn below
// the protocol level takes it out of use first.
func (c *client) unsent(ctx context.Context, cn *conn, err error) bool {
	closed := errors.Is(err, mcp.ErrConnectionClosed)
	if closed || oversized(err) {
		c.dropped(cn)
	}
	return closed && ctx.Err() == nil
}

// dropped takes cn out of use if it is still the live connection: new calls
// wait for the supervisor, who settles them when it handles cn's end
// (settleWaiters).
func (c *client) dropped(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shared.live != cn {
		return
	}
	c.shared.live = nil
	c.shared.unavailable = "the connection ended; reconnecting"
	if c.lz.pending == nil {
		c.lz.pending = &startRun{done: make(chan struct{})}
	}
}

// settleWaiters runs after the supervisor handled a lost connection: calls
// waiting for a connection (dropped, or a lazy server's on-demand start)
// keep waiting when an attempt comes next, which resolves them; otherwise
// they get the outage's error now, not at their startup timeout.
func (c *client) settleWaiters() {
	c.mu.Lock()
	waiting, dormant := c.lz.pending != nil, c.lz.dormant
	c.mu.Unlock()
	switch {
	case !waiting:
	case c.retry.soon && c.retry.timer != nil:
		// attempt resolves them.
	case dormant && !c.retry.halted:
		// A lazy server: the waiters' start, as a call's (startOnDemand).
		select {
		case c.lz.wake <- struct{}{}:
		default:
		}
	default:
		c.resolveStart()
	}
}
