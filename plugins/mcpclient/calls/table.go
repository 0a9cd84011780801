package calls

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// Options are a Table's settings.
type Options struct {
	// TimeoutMs is toolCallTimeoutMs, MaxMs toolCallMaxMs (0: no cap).
	TimeoutMs, MaxMs int
	// ReleaseDelay is how long a released context outlives its call
	// (Release).
	ReleaseDelay time.Duration
	// Logger and Label are the instance's, for what is dropped.
	Logger *slog.Logger
	Label  string
}

// Table is one instance's calls in flight. It is safe for concurrent use.
type Table struct {
	opt Options

	mu    sync.Mutex
	calls map[string]*Call // by progress token

	tokens atomic.Int64 // the last progress token handed out
	logged atomic.Int64 // the server's log messages handled (RelayLog)
	// logsOnWire counts the log messages read off a connection whose
	// messages come in one order (WireLogs), in wire order with the
	// responses: a call answered after n of them waits until n are
	// handled. Streamable HTTP settles on a quiet period instead.
	logsOnWire  atomic.Int64
	watchesWire atomic.Bool
	// progressing counts the calls not finished whose progress was read
	// on the wire (Wire): with none, no answer needs decoding.
	progressing atomic.Int64

	// stop cancels every pending release (Stop).
	stop    context.Context
	stopNow context.CancelFunc
}

// New returns an empty Table.
func New(opt Options) *Table {
	t := &Table{opt: opt}
	t.stop, t.stopNow = context.WithCancel(context.Background())
	return t
}

// Call is one tools/call in flight.
type Call struct {
	t      *Table
	token  string
	ctx    context.Context // the caller's
	ch     *tools.Channels // the caller's back-channels
	cancel context.CancelCauseFunc
	// call is the context the call runs with, part of this allocation.
	call callContext

	mu       sync.Mutex
	silence  *time.Timer // toolCallTimeoutMs; progress resets it
	max      *time.Timer // toolCallMaxMs; nil without a cap
	held     int         // questions waiting for an answer: the silence waits too
	progress int         // notifications received
	done     bool
	// wire counts the call's progress notifications read on the wire
	// (Wire), answeredAfter how many of them preceded its response (-1:
	// not known), relayed how many the handler is through with; caughtUp
	// is closed once relayed reaches answeredAfter, for Finish to wait on.
	wire, answeredAfter, relayed int
	caughtUp                     chan struct{}
	// life ends with the call: at Finish, or when the caller or a timeout
	// cancels it. A question asked for the call ends with it. It is made
	// by Ended, when a question needs it, not for every call.
	life    context.Context
	endLife context.CancelFunc

	// report serializes the caller's progress function, run outside mu so
	// that a slow one stalls neither the timeouts, Finish and Hold, nor
	// go-sdk's reading of the next message.
	report sync.Mutex
}

// callContext is the context a call runs with: the caller's, cancelled by
// the call's timeouts, with the call as its callKey value. It is a field
// of the Call rather than a context.WithValue, an allocation fewer on
// every call; contexts derived from it still find its cancelCtx, so they
// need no goroutine of their own.
type callContext struct {
	context.Context
	call *Call
}

type callKey struct{}

func (cc *callContext) Value(key any) any {
	if _, ok := key.(callKey); ok {
		return cc.call
	}
	return cc.Context.Value(key)
}

// FromContext returns the call whose context ctx is or derives from: a
// 2026-07-28 server's request during a call comes with it.
func FromContext(ctx context.Context) *Call {
	call, _ := ctx.Value(callKey{}).(*Call)
	return call
}

// Timeout is the cause of a call cancelled by one of its timeouts; it is
// a context.DeadlineExceeded.
type Timeout struct {
	key      string // toolCallTimeoutMs or toolCallMaxMs
	ms       int
	progress int // notifications received before it fired
}

func (e *Timeout) Error() string { return e.key + " elapsed" }

func (e *Timeout) Is(target error) bool { return target == context.DeadlineExceeded }

// Explain says what ran out, for the call's error.
func (e *Timeout) Explain() string {
	switch {
	case e.key == "toolCallMaxMs":
		return fmt.Sprintf("did not finish within toolCallMaxMs (%dms), progress or not", e.ms)
	case e.progress > 0:
		return fmt.Sprintf("sent neither its result nor progress for toolCallTimeoutMs (%dms) after %d progress notification(s)", e.ms, e.progress)
	}
	return fmt.Sprintf("did not answer within toolCallTimeoutMs (%dms)", e.ms)
}

func ms(v int) time.Duration { return time.Duration(v) * time.Millisecond }

// Start registers a call made with ctx and the caller's back-channels ch
// (nil: none): params gets a progress token (and
// logLevel, when not "", the level a 2026-07-28 request carries), and the
// returned context is cancelled by the call's timeouts. Finish must
// follow the call; Cancel is the caller's to run once done with the
// context.
func (t *Table) Start(ctx context.Context, params *mcp.CallToolParams, logLevel mcp.LoggingLevel, ch *tools.Channels) (*Call, context.Context) {
	cctx, cancel := context.WithCancelCause(ctx)
	var token [24]byte
	call := &Call{t: t, token: string(strconv.AppendInt(append(token[:0], "dsh-"...), t.tokens.Add(1), 10)), ctx: ctx, ch: ch, cancel: cancel, answeredAfter: -1}
	call.call = callContext{Context: cctx, call: call}
	params.SetProgressToken(call.token)
	if logLevel != "" {
		params.GetMeta()[mcp.MetaKeyLogLevel] = logLevel
	}
	t.mu.Lock()
	if t.calls == nil {
		t.calls = map[string]*Call{}
	}
	t.calls[call.token] = call
	t.mu.Unlock()
	call.mu.Lock()
	call.silence = time.AfterFunc(ms(t.opt.TimeoutMs), func() {
		call.mu.Lock()
		held, progress := call.held, call.progress
		call.mu.Unlock()
		if held == 0 {
			call.expire(&Timeout{key: "toolCallTimeoutMs", ms: t.opt.TimeoutMs, progress: progress})
		}
	})
	if t.opt.MaxMs > 0 {
		call.max = time.AfterFunc(ms(t.opt.MaxMs), func() { call.expire(&Timeout{key: "toolCallMaxMs", ms: t.opt.MaxMs}) })
	}
	call.mu.Unlock()
	return call, &call.call
}

// Caller returns the context the call was made with, for its values
// (a trace's span).
func (call *Call) Caller() context.Context { return call.ctx }

// Channels returns the caller's back-channels (answerer, roots, sampler),
// nil when it has none.
func (call *Call) Channels() *tools.Channels { return call.ch }

// Cancel cancels the call's context.
func (call *Call) Cancel() { call.cancel(nil) }

// Ended returns a context that ends with the call: at Finish, or when the
// caller or a timeout cancels it.
func (call *Call) Ended() context.Context {
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

func (call *Call) expire(cause *Timeout) {
	call.mu.Lock()
	done := call.done
	call.mu.Unlock()
	if !done {
		call.cancel(cause)
	}
}

// Finish ends the call's bookkeeping: no timeout cancels it and no progress
// report starts after it returns (one already under way may end after it).
// The progress the server sent before its result is relayed first (see
// Wire), waiting at most catchUpMax.
func (call *Call) Finish() {
	call.mu.Lock()
	if call.relayed < call.answeredAfter {
		call.caughtUp = make(chan struct{})
		wait := call.caughtUp
		call.mu.Unlock()
		t := time.NewTimer(catchUpMax)
		select {
		case <-wait:
		case <-t.C:
			call.t.opt.Logger.Debug(call.t.opt.Label+": progress sent before the result was not relayed in time; the rest is dropped", "token", call.token)
		}
		t.Stop()
		call.mu.Lock()
	}
	if call.wire > 0 && !call.done {
		call.t.progressing.Add(-1)
	}
	call.done = true
	endLife := call.endLife
	call.silence.Stop()
	if call.max != nil {
		call.max.Stop()
	}
	call.mu.Unlock()
	if endLife != nil {
		endLife()
	}
	call.t.mu.Lock()
	delete(call.t.calls, call.token)
	call.t.mu.Unlock()
}

// Hold stops the silence clock while the call waits for a person (an
// elicitation); release starts it again once the last one is answered.
func (call *Call) Hold() (release func()) {
	call.mu.Lock()
	defer call.mu.Unlock()
	call.held++
	call.silence.Stop()
	var once sync.Once
	return func() {
		once.Do(func() {
			call.mu.Lock()
			defer call.mu.Unlock()
			call.held--
			if call.held == 0 && !call.done {
				call.silence.Reset(ms(call.t.opt.TimeoutMs))
			}
		})
	}
}

func (call *Call) isDone() bool {
	call.mu.Lock()
	defer call.mu.Unlock()
	return call.done
}

// Progress handles notifications/progress: the call whose token it
// carries hears it and its silence starts again. A token of no call in
// flight (a late notification) is dropped.
func (t *Table) Progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	token, _ := p.ProgressToken.(string)
	t.mu.Lock()
	call := t.calls[token]
	t.mu.Unlock()
	if call == nil {
		t.opt.Logger.Debug(t.opt.Label+": progress for no call in flight; dropped", "token", p.ProgressToken)
		return
	}
	defer call.relayedOne()
	call.mu.Lock()
	if call.done {
		call.mu.Unlock()
		return
	}
	call.progress++
	if call.held == 0 {
		call.silence.Reset(ms(t.opt.TimeoutMs))
	}
	call.mu.Unlock()
	// One report at a time, in order, and none once Finish returned
	// (done is read again: Finish may have run meanwhile).
	call.report.Lock()
	defer call.report.Unlock()
	if call.isDone() {
		return
	}
	call.ch.ReportProgress(tools.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
}

// relayedOne counts a progress notification handled, and wakes a Finish
// waiting for it.
func (call *Call) relayedOne() {
	call.mu.Lock()
	defer call.mu.Unlock()
	call.relayed++
	if call.caughtUp != nil && call.relayed >= call.answeredAfter {
		close(call.caughtUp)
		call.caughtUp = nil
	}
}

// Only returns the one call in flight, if there is exactly one.
func (t *Table) Only() *Call {
	if calls := t.InFlight(); len(calls) == 1 {
		return calls[0]
	}
	return nil
}

// Asking returns the calls a 2025-11-25 server's request, which names no
// call, may belong to: the calls in flight that wait for no answer of
// their own. A call already waiting (its server's handler blocked on its
// question, or a question its caller abandoned, which holds the call until
// its caller's retry would have come) is not the one asking, so it takes
// no question from the calls after it. When every call waits, any may ask
// again: they all are.
func (t *Table) Asking() []*Call {
	calls := t.InFlight()
	free := calls[:0:0]
	for _, call := range calls {
		call.mu.Lock()
		if call.held == 0 {
			free = append(free, call)
		}
		call.mu.Unlock()
	}
	if len(free) == 0 {
		return calls
	}
	return free
}

// InFlight returns the calls in flight: a 2025-11-25 server's request
// during a call carries nothing that names the call, so it is the call's
// only when no other is running.
func (t *Table) InFlight() []*Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	calls := make([]*Call, 0, len(t.calls))
	for _, call := range t.calls {
		calls = append(calls, call)
	}
	return calls
}

// Release cancels a finished call's context ReleaseDelay from now, or at
// once once the table is stopped. Over Streamable HTTP, go-sdk drains the
// rest of a call's response stream on the call's context after handing
// back its result; cancelling at once would abort the drain and close the
// connection.
func (t *Table) Release(cancel context.CancelFunc) {
	stop := context.AfterFunc(t.stop, cancel)
	time.AfterFunc(t.opt.ReleaseDelay, func() {
		if stop() {
			cancel()
		}
	})
}

// Stop cancels every pending release at once (dispose).
func (t *Table) Stop() { t.stopNow() }

// settleQuiet is how long no log message may arrive before a call whose
// caller relays them ends; settleMax bounds the wait.
const (
	settleQuiet = 2 * time.Millisecond
	settleMax   = 50 * time.Millisecond
)

// RelayLog passes a server's log message to the callers of its calls in
// flight that relay logs (tools.Channels.Log: a gateway, to its client).
// notifications/message names no call, so every call running on the
// server when it arrives hears it.
func (t *Table) RelayLog(p *mcp.LoggingMessageParams) {
	defer t.logged.Add(1) // after the relay: SettleLogs waits for it
	calls := t.InFlight()
	if len(calls) == 0 {
		return
	}
	m := tools.LogMessage{Level: string(p.Level), Logger: p.Logger, Data: p.Data}
	for _, call := range calls {
		call.ch.ReportLog(m)
	}
}

// SettleLogs holds a call that just got its answer, for a caller that
// relays log messages (ch.Log) from a server that logs, until the
// messages the server sent before its answer are relayed: go-sdk takes an
// answer at once but handles notifications on a queue, so a message sent
// right before the answer may be handled after it, when the caller's
// request (a gateway client's tools/call) has ended. It waits until none
// has arrived for settleQuiet, at most settleMax.
func (t *Table) SettleLogs(ch *tools.Channels, serverLogs bool, err error) {
	if err != nil || !serverLogs || !ch.WantsLog() {
		return
	}
	if t.watchesWire.Load() {
		// Every message read before the answer is counted by now.
		target := t.logsOnWire.Load()
		deadline := time.Now().Add(catchUpMax)
		for t.logged.Load() < target {
			if time.Now().After(deadline) {
				// One lost on a closed connection, or dropped: later
				// calls must not wait for it too.
				for {
					n := t.logged.Load()
					if n >= target || t.logged.CompareAndSwap(n, target) {
						return
					}
				}
			}
			time.Sleep(settleQuiet)
		}
		return
	}
	deadline := time.Now().Add(settleMax)
	for seen := t.logged.Load(); time.Now().Before(deadline); {
		time.Sleep(settleQuiet)
		now := t.logged.Load()
		if now == seen {
			return
		}
		seen = now
	}
}
