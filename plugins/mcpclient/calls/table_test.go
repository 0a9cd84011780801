package calls

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/wire"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitTimeout = 10 * time.Second

func newTable(opt Options) *Table {
	opt.Logger = slog.New(slog.DiscardHandler)
	opt.Label = "mcp-client(t)"
	return New(opt)
}

func progress(token string, n float64) *mcp.ProgressNotificationClientRequest {
	return &mcp.ProgressNotificationClientRequest{Params: &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n}}
}

// A call gets a progress token and the log level, its context names it,
// and it is in flight until Finish.
func TestStartAndFinish(t *testing.T) {
	tb := newTable(Options{TimeoutMs: 60_000})
	params := &mcp.CallToolParams{Name: "x"}
	call, ctx := tb.Start(context.Background(), params, "debug", nil)
	defer call.Cancel()
	if params.GetProgressToken() != call.token || params.GetMeta()[mcp.MetaKeyLogLevel] != mcp.LoggingLevel("debug") {
		t.Errorf("params _meta = %v", params.GetMeta())
	}
	if FromContext(ctx) != call || FromContext(context.Background()) != nil {
		t.Error("FromContext does not find the call")
	}
	if tb.Only() != call {
		t.Error("the one call in flight is not Only")
	}
	call.Finish()
	if len(tb.InFlight()) != 0 || tb.Only() != nil {
		t.Error("a finished call is still in flight")
	}
	select {
	case <-call.Ended().Done():
	default:
		t.Error("Ended is not done after Finish")
	}
}

// Progress starts the silence again and reaches the caller; a call that
// stays silent is cancelled with a Timeout that says how much progress
// came; a held call (a person answering) is not. In a synctest bubble, on
// its fake clock: a sleep of half the silence cannot outlast it on a
// loaded machine.
func TestSilenceTimeout(t *testing.T) {
	synctest.Test(t, testSilenceTimeout)
}

func testSilenceTimeout(t *testing.T) {
	tb := newTable(Options{TimeoutMs: 100})
	var reported atomic.Int32
	ch := &tools.Channels{Progress: func(tools.Progress) { reported.Add(1) }}
	call, cctx := tb.Start(context.Background(), &mcp.CallToolParams{}, "", ch)
	defer call.Finish()
	for i := range 5 {
		time.Sleep(50 * time.Millisecond)
		tb.Progress(context.Background(), progress(call.token, float64(i)))
	}
	if cctx.Err() != nil {
		t.Fatal("cancelled although progress came within every toolCallTimeoutMs")
	}
	if reported.Load() != 5 {
		t.Errorf("%d progress reports reached the caller, want 5", reported.Load())
	}
	release := call.Hold()
	time.Sleep(250 * time.Millisecond)
	if cctx.Err() != nil {
		t.Fatal("cancelled while held")
	}
	release()
	<-cctx.Done()
	var timeout *Timeout
	if !errors.As(context.Cause(cctx), &timeout) || !errors.Is(context.Cause(cctx), context.DeadlineExceeded) {
		t.Fatalf("cause = %v", context.Cause(cctx))
	}
	if want := "sent neither its result nor progress for toolCallTimeoutMs (100ms) after 5 progress notification(s)"; timeout.Explain() != want {
		t.Errorf("Explain = %q", timeout.Explain())
	}
}

// toolCallMaxMs ends a call whatever its progress.
func TestMaxTimeout(t *testing.T) {
	tb := newTable(Options{TimeoutMs: 60_000, MaxMs: 100})
	call, cctx := tb.Start(context.Background(), &mcp.CallToolParams{}, "", nil)
	defer call.Finish()
	mcptest.WaitFor(t, waitTimeout, "toolCallMaxMs", func() bool {
		tb.Progress(context.Background(), progress(call.token, 1))
		return cctx.Err() != nil
	})
	var timeout *Timeout
	if !errors.As(context.Cause(cctx), &timeout) || timeout.key != "toolCallMaxMs" {
		t.Errorf("cause = %v", context.Cause(cctx))
	}
}

// A release comes after ReleaseDelay; Stop releases what is pending at
// once, and a release after Stop is immediate.
func TestReleaseAndStop(t *testing.T) {
	tb := newTable(Options{TimeoutMs: 60_000, ReleaseDelay: 50 * time.Millisecond})
	var released atomic.Int32
	tb.Release(func() { released.Add(1) })
	mcptest.WaitFor(t, waitTimeout, "the delayed release", func() bool { return released.Load() == 1 })

	tb = newTable(Options{TimeoutMs: 60_000, ReleaseDelay: time.Hour})
	var early atomic.Int32
	tb.Release(func() { early.Add(1) })
	tb.Stop()
	mcptest.WaitFor(t, waitTimeout, "the release at Stop", func() bool { return early.Load() == 1 })
	tb.Release(func() { early.Add(1) })
	mcptest.WaitFor(t, waitTimeout, "the release after Stop", func() bool { return early.Load() == 2 })
}

// A call waiting for an answer (one its caller may have abandoned) is
// not the one asking: a request that names no call goes to the other.
func TestAskingSkipsCallsWaitingForAnAnswer(t *testing.T) {
	tb := newTable(Options{TimeoutMs: 60_000})
	waiting, _ := tb.Start(context.Background(), &mcp.CallToolParams{Name: "a"}, "", nil)
	defer waiting.Cancel()
	defer waiting.Finish()
	release := waiting.Hold()
	next, _ := tb.Start(context.Background(), &mcp.CallToolParams{Name: "b"}, "", nil)
	defer next.Cancel()
	defer next.Finish()
	if got := tb.Asking(); len(got) != 1 || got[0] != next {
		t.Errorf("Asking = %v, want only the call waiting for nothing", got)
	}
	next.Hold()
	if got := tb.Asking(); len(got) != 2 {
		t.Errorf("Asking = %v with every call waiting, want both", got)
	}
	release()
	if got := tb.Asking(); len(got) != 1 || got[0] != waiting {
		t.Errorf("Asking = %v, want the answered call", got)
	}
}

// The table's wire subscriber reads tokens whatever the order and
// escaping of members: a call's progress is counted, its answer fixes how
// many came first, and what comes after the answer is not waited for.
func TestWireFollowsCalls(t *testing.T) {
	tb := newTable(Options{TimeoutMs: 60_000})
	params := &mcp.CallToolParams{Name: "x"}
	call, _ := tb.Start(context.Background(), params, "", nil)
	defer call.Cancel()
	token := params.GetProgressToken().(string)
	decode := func(s string) *jsonrpc.Request {
		t.Helper()
		msg, err := jsonrpc.DecodeMessage([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return msg.(*jsonrpc.Request)
	}
	// _meta last, after a long argument, and escaped.
	req := decode(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"pad":"` + strings.Repeat("x", 4096) + `"},"\u005fmeta":{"progress\u0054oken":"` + token + `"}}}`)
	onWire := tb.Wire().Received
	if tb.awaits(req) {
		t.Error("the answer to a call with no progress read is awaited")
	}
	for _, p := range []string{
		`{"progress\u0054oken":"` + token + `","progress":1}`,
		`{"progress":2,"progressToken":"` + token + `"}`,
		`{"progressToken":"dsh-0","PROGRESSTOKEN":"` + token + `"}`, // go-sdk reads dsh-0: not this call's
		`{"progressToken":"` + token[:3] + `\u002d` + token[4:] + `"}`,
	} {
		onWire(wire.Message{Request: decode(`{"jsonrpc":"2.0","method":"notifications/progress","params":` + p + `}`)})
	}
	id, _ := jsonrpc.MakeID(float64(1))
	onWire(wire.Message{Request: req, Response: &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}})
	onWire(wire.Message{Request: decode(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` + token + `"}}`)})
	call.mu.Lock()
	wireN, after := call.wire, call.answeredAfter
	call.mu.Unlock()
	if wireN != 4 || after != 3 {
		t.Errorf("progress counted %d, answered after %d; want 4 and 3", wireN, after)
	}
	if !tb.awaits(req) {
		t.Error("the answer to a call with progress read is not awaited")
	}
	call.mu.Lock()
	call.relayed = call.answeredAfter // as the progress handler would have
	call.mu.Unlock()
	call.Finish()
	if n := tb.progressing.Load(); n != 0 {
		t.Errorf("%d calls with progress counted after the only one finished", n)
	}
}
