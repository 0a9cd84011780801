package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/bridge"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/calls"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/result"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"
	"github.com/dsh-host/dsh-host/services/tools"
)

// executor returns the Execute of one tool: the raw name goes on the wire,
// the caller's ctx (and the per-call timeout) cancels the call on the
// server too, since go-sdk sends notifications/cancelled.
func (c *client) executor(t *toolset.Tool) func(context.Context, tools.Call) (tools.Output, error) {
	return func(ctx context.Context, call tools.Call) (tools.Output, error) {
		cn, done, err := c.acquire(ctx, t.Raw)
		if err != nil {
			return tools.Output{}, err
		}
		params := &mcp.CallToolParams{Name: t.Raw, Arguments: objectArgs(call.Args)}
		res, cctx, err := c.callOn(ctx, cn, params, call.Channels)
		// Sent once more, on the connection that replaces cn, when the
		// request never left (cn's reader had already stopped), or when
		// the server refused to ask its question on cn's revision and the
		// tool is safe to repeat (revision.go).
		var again string
		switch {
		case err != nil && c.unsent(ctx, cn, err):
			again = "was not sent: the connection ended before it, and no new one came"
		case c.askedOldStyle(cn, res, err):
			if !repeatable(t.Hints) {
				done()
				return tools.Output{}, c.notRepeated(t)
			}
			again = "asked its client the 2025-11-25 way, and reconnecting on 2025-11-25 failed"
		}
		if again != "" {
			done()
			if cn, done, err = c.acquire(ctx, t.Raw); err != nil {
				return tools.Output{}, fmt.Errorf("%s: tool %q %s: %w", c.label, t.Raw, again, err)
			}
			res, cctx, err = c.callOn(ctx, cn, params, call.Channels)
		}
		defer done()
		if err != nil {
			return tools.Output{}, c.callError(ctx, cctx, cn, t, err)
		}
		cn.answered.Store(true)
		if res.IsError {
			// The registry owns the failure path; images are not stored.
			return tools.Output{}, c.proj.ToolError(t.Raw, res)
		}
		value := result.FromAnswer(res)
		if t.Output != nil {
			if err := t.Output.Validate(res.StructuredContent); err != nil {
				return tools.Output{}, fmt.Errorf("%w of %q: %s: structuredContent does not match the tool's outputSchema: %v",
					tools.ErrInvalidOutput, t.Public, c.label, err)
			}
		}
		if call.Caller.PassThrough {
			// Empty, not nil: nil would have the registry render the value.
			return tools.Output{Value: value, Content: []tools.Content{}}, nil
		}
		return tools.Output{Value: value, Content: c.proj.Model(ctx, call.Caller, t.Raw, res.Content)}, nil
	}
}

// callOn sends one tools/call on cn, as a call of the calls table (its
// timeouts, progress, questions); cctx is the call's context, for
// callError.
func (c *client) callOn(ctx context.Context, cn *conn, params *mcp.CallToolParams, ch *tools.Channels) (*mcp.CallToolResult, context.Context, error) {
	cn.calls.Add(1)
	defer func() {
		if cn.calls.Add(-1) == 0 && cn.retiring.Load() {
			// The last call on a connection awaiting its switch.
			c.requestSwitch(cn)
		}
	}()
	inFlight, cctx := c.calls.Start(ctx, params, cn.requestLogLevel, ch)
	var res *mcp.CallToolResult
	var err error
	if c.tracer == nil {
		res, err = cn.session.CallTool(cctx, params)
	} else {
		sctx, span := c.startCallSpan(cctx, cn, params)
		res, err = cn.session.CallTool(sctx, params)
		c.endCallSpan(span, ctx, cctx, res, err)
	}
	c.notePinNeeded(res, err)
	c.calls.SettleLogs(ch, cn.logs, err)
	inFlight.Finish()
	c.release(inFlight.Cancel, err)
	return res, cctx, err
}

// httpReleaseDelay is how long a successful Streamable HTTP call's context
// outlives the call.
const httpReleaseDelay = time.Second

// release cancels a call's context once the call is over.
//
// Over Streamable HTTP, go-sdk hands back the result as soon as the
// response event arrives on the POST's SSE stream, and drains the rest of
// that stream in the background on the same context (its request context
// is the call's). Cancelling at once aborts the drain, and net/http then
// closes the connection instead of keeping it alive: every call would pay
// a new TCP connection. There is no hook that says the drain is done, and
// a context detached from the caller would not abort a stream the server
// never ends, so a successful HTTP call's context is released after
// releaseDelay (the end of the stream is normally already in flight; up
// to a tenth of it later, so that releases come in batches), or at
// dispose, whichever comes first. A failed call has nothing to drain.
func (c *client) release(cancel context.CancelFunc, err error) {
	if err != nil || c.opt.cfg.Transport != TransportStreamableHTTP {
		cancel()
		return
	}
	c.calls.Release(cancel)
}

// callError explains a failed tools/call. Cancellation and timeouts stay
// recognizable with errors.Is; a failure below the protocol level makes the
// supervisor check the connection.
func (c *client) callError(ctx, cctx context.Context, cn *conn, t *toolset.Tool, err error) error {
	var timeout *calls.Timeout
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: tool %q: %w", c.label, t.Raw, ctx.Err())
	case errors.As(context.Cause(cctx), &timeout):
		return fmt.Errorf("%s: tool %q %s; the call was cancelled: %w", c.label, t.Raw, timeout.Explain(), context.DeadlineExceeded)
	}
	if bridge.Answered(err) {
		return fmt.Errorf("%s: tool %q: the server answered with an error: %w", c.label, t.Raw, err)
	}
	if oversized(err) {
		// No probe: the supervisor already reconnects at once, and a
		// failed ping would report a plain loss (with its backoff).
		return fmt.Errorf("%s: tool %q failed: the server sent a message over the %d MiB frame limit (this call's answer or another's); "+
			"go-sdk cannot skip such a message, so the connection was dropped, every call in flight on it failed, and it is being re-established now: %w",
			c.label, t.Raw, frameLimitMiB, err)
	}
	c.requestProbe(cn)
	return fmt.Errorf("%s: tool %q failed: %w", c.label, t.Raw, err)
}

// objectArgs passes a JSON object through unchanged and turns anything else
// (null, a string, an array, nothing) into {}.
func objectArgs(raw json.RawMessage) any {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return json.RawMessage(t)
	}
	return map[string]any{}
}
