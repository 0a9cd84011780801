package mcpclient

// A tools/call in flight: its progress token, the caller its progress goes
// to, and its two timeouts: toolCallTimeoutMs, the silence allowed (every
// progress notification starts it again), and toolCallMaxMs, the whole.
// Server log messages are here too: like progress, they are notifications
// the server sends while it works.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// protocolNoSetLevel is the first revision without logging/setLevel (the
// level then travels in each request's _meta).
const protocolNoSetLevel = "2026-07-28"

// inflight is one tools/call.
type inflight struct {
	c      *client
	token  string
	ctx    context.Context // the caller's: its progress function, its elicitation answerer
	cancel context.CancelCauseFunc
	// call is the context the call runs with, part of this allocation.
	call callContext

	// The call's times run out on the client's alarm (deadlines.go).
	mu        sync.Mutex
	silenceAt time.Time // toolCallTimeoutMs runs out; progress moves it
	maxAt     time.Time // toolCallMaxMs runs out; zero without a cap
	held      int       // elicitations waiting for an answer: the silence waits too
	progress  int       // notifications received
	done      bool
	// life ends with the call: at finish, or when the caller or a timeout
	// cancels it. A question asked for the call ends with it. It is made
	// by ended, when a question needs it, not for every call.
	life    context.Context
	endLife context.CancelFunc

	// report serializes the caller's progress function, run outside mu so
	// that a slow one stalls neither the timeouts, finish and hold, nor
	// go-sdk's reading of the next message.
	report sync.Mutex
}

// callContext is the context a call runs with: the caller's, cancelled by
// the call's timeouts, with the call as its inflightKey value. It is a
// field of the inflight rather than a context.WithValue, an allocation
// fewer on every call; contexts derived from it still find its cancelCtx,
// so they need no goroutine of their own.
type callContext struct {
	context.Context
	call *inflight
}

func (cc *callContext) Value(key any) any {
	if _, ok := key.(inflightKey); ok {
		return cc.call
	}
	return cc.Context.Value(key)
}

// callTimeout is the cause of a call cancelled by one of its timeouts; it
// is a context.DeadlineExceeded.
type callTimeout struct {
	key      string // toolCallTimeoutMs or toolCallMaxMs
	ms       int
	progress int // notifications received before it fired
}

func (e *callTimeout) Error() string { return e.key + " elapsed" }

func (e *callTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// explain says what ran out, for the call's error.
func (e *callTimeout) explain() string {
	switch {
	case e.key == "toolCallMaxMs":
		return fmt.Sprintf("did not finish within toolCallMaxMs (%dms), progress or not", e.ms)
	case e.progress > 0:
		return fmt.Sprintf("sent neither its result nor progress for toolCallTimeoutMs (%dms) after %d progress notification(s)", e.ms, e.progress)
	}
	return fmt.Sprintf("did not answer within toolCallTimeoutMs (%dms)", e.ms)
}

type inflightKey struct{}

// startCall registers a call made with ctx: params gets a progress token
// (and, where the protocol carries it per request, the log level), and the
// returned context is cancelled by the call's timeouts. finish must follow
// the call; the context's cancel (call.cancel) is the caller's to run.
func (c *client) startCall(ctx context.Context, cn *conn, params *mcp.CallToolParams) (*inflight, context.Context) {
	cctx, cancel := context.WithCancelCause(ctx)
	var token [24]byte
	call := &inflight{c: c, token: string(strconv.AppendInt(append(token[:0], "dsh-"...), c.tokens.Add(1), 10)), ctx: ctx, cancel: cancel}
	call.call = callContext{Context: cctx, call: call}
	params.SetProgressToken(call.token)
	if cn.requestLogLevel != "" {
		params.GetMeta()[mcp.MetaKeyLogLevel] = cn.requestLogLevel
	}
	// The first time to ring for is read from locals: once in c.calls, the
	// call's fields are its lock's (an answered question moves silenceAt).
	now := time.Now()
	first := now.Add(ms(c.cfg.ToolCallTimeoutMs))
	call.silenceAt = first
	if c.cfg.ToolCallMaxMs > 0 {
		call.maxAt = now.Add(ms(c.cfg.ToolCallMaxMs))
		if call.maxAt.Before(first) {
			first = call.maxAt
		}
	}
	// In c.calls before the alarm is asked: the alarm finds it there.
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]*inflight{}
	}
	c.calls[call.token] = call
	c.mu.Unlock()
	c.deadlines.ask(first)
	return call, &call.call
}

// due says which of the call's times ran out by now, if one did, and
// otherwise when the next one runs out (zero for none: a held call without
// a cap).
func (call *inflight) due(now time.Time) (*callTimeout, time.Time) {
	call.mu.Lock()
	defer call.mu.Unlock()
	cfg := call.c.cfg
	switch {
	case call.done:
		return nil, time.Time{}
	case !call.maxAt.IsZero() && !now.Before(call.maxAt):
		return &callTimeout{key: "toolCallMaxMs", ms: cfg.ToolCallMaxMs}, time.Time{}
	case call.held == 0 && !now.Before(call.silenceAt):
		return &callTimeout{key: "toolCallTimeoutMs", ms: cfg.ToolCallTimeoutMs, progress: call.progress}, time.Time{}
	}
	next := call.maxAt
	if call.held == 0 && (next.IsZero() || call.silenceAt.Before(next)) {
		next = call.silenceAt
	}
	return nil, next
}

// ended returns a context that ends with the call: at finish, or when the
// caller or a timeout cancels it.
func (call *inflight) ended() context.Context {
	call.mu.Lock()
	defer call.mu.Unlock()
	if call.life == nil {
		call.life, call.endLife = context.WithCancel(&call.call)
		if call.done {
			call.endLife()
		}
	}
	return call.life
}

func (call *inflight) expire(cause *callTimeout) {
	call.mu.Lock()
	done := call.done
	call.mu.Unlock()
	if !done {
		call.cancel(cause)
	}
}

// finish ends the call's bookkeeping: no timeout cancels it and no progress
// report starts after it returns (one already under way may end after it).
func (call *inflight) finish() {
	call.mu.Lock()
	call.done = true
	endLife := call.endLife
	call.mu.Unlock()
	if endLife != nil {
		endLife()
	}
	call.c.mu.Lock()
	delete(call.c.calls, call.token)
	call.c.mu.Unlock()
}

// hold stops the silence clock while the call waits for a person (an
// elicitation); release starts it again once the last one is answered.
func (call *inflight) hold() (release func()) {
	call.mu.Lock()
	defer call.mu.Unlock()
	call.held++
	var once sync.Once
	return func() {
		once.Do(func() {
			call.mu.Lock()
			defer call.mu.Unlock()
			call.held--
			if call.held == 0 && !call.done {
				call.silenceAt = time.Now().Add(ms(call.c.cfg.ToolCallTimeoutMs))
				// The alarm may have rung meanwhile and found nothing due.
				call.c.deadlines.ask(call.silenceAt)
			}
		})
	}
}

// onProgress handles notifications/progress: the call whose token it
// carries hears it and its silence starts again. A token of no call
// in flight (a late notification) is dropped.
func (c *client) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	token, _ := p.ProgressToken.(string)
	c.mu.Lock()
	call := c.calls[token]
	c.mu.Unlock()
	if call == nil {
		c.log.Debug(c.label+": progress for no call in flight; dropped", "token", p.ProgressToken)
		return
	}
	call.mu.Lock()
	if call.done {
		call.mu.Unlock()
		return
	}
	call.progress++
	if call.held == 0 {
		// Later than before, so the alarm, asked for the old time or an
		// earlier one, finds the new one when it rings.
		call.silenceAt = time.Now().Add(ms(c.cfg.ToolCallTimeoutMs))
	}
	call.mu.Unlock()
	// One report at a time, in order, and none once finish returned
	// (done is read again: finish may have run meanwhile).
	call.report.Lock()
	defer call.report.Unlock()
	if call.isDone() {
		return
	}
	tools.ReportProgress(call.ctx, tools.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
}

func (call *inflight) isDone() bool {
	call.mu.Lock()
	defer call.mu.Unlock()
	return call.done
}

// onlyCall returns the one call in flight, if there is exactly one.
func (c *client) onlyCall() *inflight {
	if calls := c.callsInFlight(); len(calls) == 1 {
		return calls[0]
	}
	return nil
}

// callsInFlight returns the calls in flight: a 2025-11-25 server's request
// during a call carries nothing that names the call, so it is the call's
// only when no other is running.
func (c *client) callsInFlight() []*inflight {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := make([]*inflight, 0, len(c.calls))
	for _, call := range c.calls {
		calls = append(calls, call)
	}
	return calls
}

// mcpLogLevel is the lowest MCP log level the instance's logger shows.
func (c *client) mcpLogLevel() mcp.LoggingLevel {
	ctx := context.Background()
	switch {
	case c.log.Enabled(ctx, slog.LevelDebug):
		return "debug"
	case c.log.Enabled(ctx, slog.LevelInfo):
		return "info"
	case c.log.Enabled(ctx, slog.LevelWarn):
		return "warning"
	}
	return "error"
}

// logsByRequest reports whether the server takes its log level in each
// request's _meta (2026-07-28 on) rather than through logging/setLevel.
func logsByRequest(res *mcp.InitializeResult) bool {
	return res != nil && res.ProtocolVersion >= protocolNoSetLevel
}

// logLevels asks a server that logs for the messages the instance's log
// shows: on a revision with logging/setLevel once, on one without it in
// each request (cn.requestLogLevel, which startCall puts in _meta).
func (c *client) logLevels(ctx context.Context, cn *conn) {
	res := cn.session.InitializeResult()
	cn.logs = res != nil && res.Capabilities != nil && res.Capabilities.Logging != nil
	switch {
	case !cn.logs:
	case logsByRequest(res):
		cn.requestLogLevel = c.mcpLogLevel()
	default:
		//lint:ignore SA1019 logging is deprecated from 2026-07-28, and this path serves only the revisions before it.
		if err := cn.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: c.mcpLogLevel()}); err != nil {
			c.log.Debug(c.label+": the server refused logging/setLevel; it logs at its own level", "err", err)
		}
	}
}

// onLog writes a server's notifications/message to the instance's log at
// the mapped level: debug as debug; info and notice as info; warning as
// warn; error, critical, alert and emergency as error.
func (c *client) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	c.relayLog(p)
	level := slog.LevelDebug
	switch p.Level {
	case "info", "notice":
		level = slog.LevelInfo
	case "warning":
		level = slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		level = slog.LevelError
	}
	text, ok := p.Data.(string)
	if !ok {
		b, err := json.Marshal(p.Data)
		if err != nil {
			text = fmt.Sprint(p.Data)
		} else {
			text = string(b)
		}
	}
	attrs := []any{"severity", string(p.Level)}
	if p.Logger != "" {
		attrs = append(attrs, "logger", p.Logger)
	}
	attrs = append(attrs, "data", text)
	c.log.Log(ctx, level, "server log", attrs...)
}
