package mcpclient

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"
)

// A server written for 2025-11-25 asks its client during a call with a
// request of its own (elicitation/create, sampling/createMessage,
// roots/list). On 2026-07-28, which go-sdk negotiates by default, a go-sdk
// server refuses to send such a request itself, before anything reaches
// the host, and the call fails with that refusal. When the entry pins no
// protocolVersion, the host does what the pin would: it reconnects that
// server on 2025-11-25, remembers so in the catalog cache (the next start
// connects on it at once) and says so once.
//
// The refused call had reached the server and run up to its question: a
// tool that acts before it asks may have acted. It is sent again on the
// new connection only when the tool's annotations say that is safe
// (repeatable); any other tool's call is answered with an error that says
// so, and its caller decides whether to call again. This happens once per
// launch, the first time the server asks.

// oldRevision is the revision on which servers may ask during a call.
const oldRevision = "2025-11-25"

// oldStyleRefusal is how go-sdk's server refuses a handler that asks its
// client (elicitation/create, sampling/createMessage, roots/list) during a
// request once 2026-07-28 is negotiated.
const oldStyleRefusal = "cannot be sent while serving a request on protocol version"

// protocolVersion is the revision to offer the server: the entry's pin, or
// the one this launch was found to need, or "" for go-sdk's latest.
func (c *client) protocolVersion() string {
	if v := c.opt.cfg.ProtocolVersion; v != "" {
		return v
	}
	return c.revision
}

// askedOldStyle reports whether a call on cn failed because its server
// asked the 2025-11-25 way on a later revision: cn is taken out of use, and the supervisor reconnects on 2025-11-25
// (switchRevision) once cn's other calls have ended.
func (c *client) askedOldStyle(cn *conn, res *mcp.CallToolResult, err error) bool {
	if c.opt.cfg.ProtocolVersion != "" || !refusedOldStyle(res, err) {
		return false
	}
	if init := cn.session.InitializeResult(); init == nil || init.ProtocolVersion <= oldRevision || cn.offered == oldRevision {
		// Already on it, or offered it and the server chose a later one:
		// another switch would not help (nor loop).
		return false
	}
	cn.retiring.Store(true)
	c.dropped(cn)
	c.requestSwitch(cn)
	return true
}

// repeatable reports whether a call that reached the server may be sent a
// second time, by the spec's ToolAnnotations: a tool that only reads, or an
// idempotent one that says it is not destructive (destructiveHint defaults
// to true, idempotentHint to false; both mean something only when
// readOnlyHint is false). Hints from a server are not to be trusted for
// the host's own decisions, but here they only decide whether the server's
// own tool runs twice, which a lying server could do anyway.
func repeatable(h *mcp.ToolAnnotations) bool {
	if h == nil {
		return false
	}
	return h.ReadOnlyHint || h.IdempotentHint && h.DestructiveHint != nil && !*h.DestructiveHint
}

// notRepeated is the answer to a refused call of a tool that is not safe
// to repeat (askedOldStyle, repeatable).
func (c *client) notRepeated(t *toolset.Tool) error {
	return fmt.Errorf("%s: tool %q asked its client a question during the call the 2025-11-25 way, which its MCP SDK refuses on the later revision negotiated, "+
		"so the server is being reconnected on 2025-11-25 (remembered for its next starts); the call was not sent again because it had reached the server "+
		"and may have acted before it asked (its annotations do not say it is read-only, or idempotent and not destructive): "+
		"check whether it did, and call it again if needed", c.label, t.Raw)
}

func (c *client) requestSwitch(cn *conn) {
	select {
	case c.watch.older <- cn:
	default:
	}
}

// refusedOldStyle reports whether a call's failure is go-sdk's refusal to
// ask during a call on 2026-07-28.
func refusedOldStyle(res *mcp.CallToolResult, err error) bool {
	var text string
	switch {
	case err != nil:
		text = err.Error()
	case res != nil && res.IsError:
		for _, b := range res.Content {
			if t, ok := b.(*mcp.TextContent); ok {
				text += t.Text
			}
		}
	}
	return strings.Contains(text, oldStyleRefusal)
}

// switchRevision reconnects the server on 2025-11-25 after a call on cn was
// refused (askedOldStyle), once the calls still running on cn have ended:
// the last of them asks again (callOn). One server process at a time, as
// for any reconnect.
func (c *client) switchRevision(ctx context.Context, cn *conn) {
	if cn != c.conn || c.retry.halted {
		return
	}
	if cn.calls.Load() > 0 {
		return
	}
	c.revision = oldRevision
	c.tools.SetProtocol(oldRevision)
	c.revisionNote.Do(func() {
		c.opt.logger.Warn(c.label + `: the server asked its client a question during a call the 2025-11-25 way, which its MCP SDK refuses ` +
			`on the later revision negotiated; reconnecting it on 2025-11-25, remembered in the catalog cache for its next starts ` +
			`(set protocolVersion in this entry's config to choose the revision yourself)`)
	})
	c.conn = nil
	c.mu.Lock()
	if c.shared.live == cn {
		c.shared.live = nil
	}
	c.mu.Unlock()
	if !c.closeConn(cn, "previous generation") {
		c.resolveStart()
		return
	}
	c.attempt(ctx, false)
}

// notePinNeeded logs, once per instance, that a call failed because its
// server asked mid-call the 2025-11-25 way on a later revision the entry
// pins itself: the host leaves a pin alone, so the log says what works.
func (c *client) notePinNeeded(res *mcp.CallToolResult, err error) {
	if v := c.opt.cfg.ProtocolVersion; v == "" || v <= oldRevision || !refusedOldStyle(res, err) {
		return
	}
	c.pinHint.Do(func() {
		c.opt.logger.Warn(c.label + `: the server asked its client a question during a call the 2025-11-25 way, which its MCP SDK refuses ` +
			`on the revision this entry pins: set protocolVersion: "2025-11-25" in this entry's config so that its questions reach the caller`)
	})
}
