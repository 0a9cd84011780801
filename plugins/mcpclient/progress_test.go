package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/bridge"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// progressTool sends steps progress notifications gap apart, then answers;
// with steps < 0 it sends them until the call is cancelled.
func progressTool(steps int, gap time.Duration, thenHang bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i := 1; steps < 0 || i <= steps; i++ {
			select {
			case <-time.After(gap):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(steps), Message: "step",
				})
			}
		}
		if thenHang {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return textResult("done"), nil
	}
}

// progressCall calls tool with a progress listener and returns the result
// and the reports it heard.
func progressCall(e *testEnv, tool string) (tools.Result, []tools.Progress) {
	var mu sync.Mutex
	var got []tools.Progress
	ch := &tools.Channels{Progress: func(p tools.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}}
	res := e.reg.Run(context.Background(), tools.Call{Name: tool, Args: []byte("{}"), Channels: ch})
	mu.Lock()
	defer mu.Unlock()
	return res, got
}

// In a synctest bubble, on its fake clock: the server's gaps and the
// client's timeouts are exact, whatever the load.
func TestProgressResetsTheSilenceTimeout(t *testing.T) {
	synctest.Test(t, testProgressResetsTheSilenceTimeout)
}

func testProgressResetsTheSilenceTimeout(t *testing.T) {
	srv := newFakeServer(t, nil)
	// 25 steps 100ms apart: 2.5s in all, two and a half times the silence
	// allowed, and every gap a tenth of it.
	srv.addTool("long", progressTool(25, 100*time.Millisecond, false))
	srv.addTool("stalls", progressTool(2, 10*time.Millisecond, true))
	srv.addTool("endless", progressTool(-1, 20*time.Millisecond, false))
	cfg := testConfig("pg")
	cfg.ToolCallTimeoutMs = 1000
	e := mustStart(t, cfg, srv)

	res, got := progressCall(e, "mcp__pg__long")
	if res.Err != nil {
		t.Fatalf("a call three times longer than toolCallTimeoutMs, with progress all along, failed: %v", res.Err)
	}
	// Every report, the last one included, before the result.
	if len(got) != 25 || got[0] != (tools.Progress{Progress: 1, Total: 25, Message: "step"}) || got[24].Progress != 25 {
		t.Errorf("progress heard: %+v, want the reports 1/25 … 25/25", got)
	}

	res, got = progressCall(e, "mcp__pg__stalls")
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "sent neither its result nor progress for toolCallTimeoutMs (1000ms) after 2 progress notification(s)") {
		t.Errorf("a call silent after 2 notifications: err %v", res.Err)
	}
	if len(got) != 2 {
		t.Errorf("heard %d reports, want 2 (both long before the timeout)", len(got))
	}

	// toolCallMaxMs caps the whole, progress or not.
	cfg.ToolCallMaxMs = 1200
	e2 := mustStart(t, cfg, srv)
	res, got = progressCall(e2, "mcp__pg__endless")
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "did not finish within toolCallMaxMs (1200ms)") {
		t.Errorf("endless progress with toolCallMaxMs: err %v", res.Err)
	}
	if len(got) == 0 {
		t.Error("no progress heard before toolCallMaxMs cut the call")
	}
}

// go-sdk queues incoming notifications for a goroutine of their own but
// hands a response to its call as soon as it is read: progress sent just
// before the result was handled after the call was over, and dropped. A
// caller slow with its first report (so the rest queue up behind it)
// hears every report, in order, before the call returns.
func TestProgressBeforeTheResultIsRelayed(t *testing.T) {
	srv := newFakeServer(t, nil)
	srv.addTool("burst", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 5; i++ {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 5})
		}
		return textResult("done"), nil
	})
	e := mustStart(t, testConfig("pb"), srv)
	for range 3 {
		var mu sync.Mutex
		var heard []float64
		ch := &tools.Channels{Progress: func(p tools.Progress) {
			if p.Progress == 1 {
				// Long enough for the result to be read meanwhile.
				time.Sleep(50 * time.Millisecond)
			}
			mu.Lock()
			heard = append(heard, p.Progress)
			mu.Unlock()
		}}
		res := e.reg.Run(context.Background(), tools.Call{Name: "mcp__pb__burst", Args: []byte("{}"), Channels: ch})
		mu.Lock()
		got := slices.Clone(heard)
		mu.Unlock()
		if res.Err != nil || !slices.Equal(got, []float64{1, 2, 3, 4, 5}) {
			t.Fatalf("call: err %v, progress heard before it returned %v, want 1 … 5", res.Err, got)
		}
	}
}

// A server may write JSON as JSON allows rather than as go-sdk does (here
// every method with its slash escaped, "notifications\/progress"): over
// Streamable HTTP too, the progress it sends before its result is relayed
// before the call returns.
func TestProgressBeforeTheResultIsRelayedWhateverTheJSON(t *testing.T) {
	srv := newFakeServer(t, nil)
	srv.addTool("burst", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 5; i++ {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 5})
		}
		return textResult("done"), nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(escapingWriter{w}, r)
	}))
	t.Cleanup(hs.Close)
	cfg := testConfig("pj")
	cfg.Transport, cfg.Command, cfg.URL = TransportStreamableHTTP, "", hs.URL
	e := mustStart(t, cfg, nil, withTransport)
	for range 3 {
		var mu sync.Mutex
		var heard []float64
		ch := &tools.Channels{Progress: func(p tools.Progress) {
			if p.Progress == 1 {
				// Long enough for the result to be read meanwhile.
				time.Sleep(50 * time.Millisecond)
			}
			mu.Lock()
			heard = append(heard, p.Progress)
			mu.Unlock()
		}}
		res := e.reg.Run(context.Background(), tools.Call{Name: "mcp__pj__burst", Args: []byte("{}"), Channels: ch})
		mu.Lock()
		got := slices.Clone(heard)
		mu.Unlock()
		if res.Err != nil || !slices.Equal(got, []float64{1, 2, 3, 4, 5}) {
			t.Fatalf("call: err %v, progress heard before it returned %v, want 1 … 5", res.Err, got)
		}
	}
}

// escapingWriter writes the server's SSE events with the slash of every
// method escaped, as JSON allows (go-sdk writes each event at once).
type escapingWriter struct{ http.ResponseWriter }

func (w escapingWriter) Write(b []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(bytes.ReplaceAll(b, []byte(`"method":"notifications/`), []byte(`"method":"notifications\/`))); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w escapingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A caller's progress function that takes its time (a terminal, the
// network) holds up neither the call's end nor its timers.
func TestSlowProgressFunctionHoldsNothing(t *testing.T) {
	srv := newFakeServer(t, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv.addTool("one", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1})
		// Answers once the caller is busy with the report.
		select {
		case <-entered:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textResult("done"), nil
	})
	e := mustStart(t, testConfig("sp"), srv)
	defer close(release)
	ch := &tools.Channels{Progress: func(tools.Progress) {
		once.Do(func() { close(entered) })
		<-release
	}}
	done := make(chan tools.Result, 1)
	go func() {
		done <- e.reg.Run(context.Background(), tools.Call{Name: "mcp__sp__one", Args: []byte("{}"), Channels: ch})
	}()
	select {
	case res := <-done:
		if res.Err != nil || resultText(res) != "done" {
			t.Errorf("call = %v %q", res.Err, resultText(res))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end while the progress function was still busy")
	}
}

func TestEveryCallCarriesItsOwnProgressToken(t *testing.T) {
	srv := newFakeServer(t, nil)
	var mu sync.Mutex
	tokens := map[any]bool{}
	srv.addTool("tok", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		tokens[req.Params.GetProgressToken()] = true
		mu.Unlock()
		return textResult("ok"), nil
	})
	e := mustStart(t, testConfig("tk"), srv)
	for range 3 {
		if res := e.call(tools.Caller{}, "mcp__tk__tok", "{}"); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if len(tokens) != 3 || tokens[nil] {
		t.Errorf("tokens seen by the server: %v, want 3 distinct ones", tokens)
	}
}

// askTool asks with a multi round-trip input request (2026-07-28) and
// answers with what came back.
func askTool(schema map[string]any) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		resp, ok := req.Params.InputResponses["q"]
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"q": &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: schema},
			}, RequestState: "s1"}, nil
		}
		b, _ := json.Marshal(resp)
		return textResult(string(b)), nil
	}
}

func withElicit(s *elicit.Service) envOption {
	return func(_ *testEnv, o *options) { o.elicit = s }
}

// revisions are the two ways a server asks: a fake server limited to
// 2025-11-25 turns the tool's input requests into elicitation/create
// requests (go-sdk's server middleware); at 2026-07-28 they travel in the
// result and go-sdk's client retries the call with the answers.
var revisions = []struct {
	name string
	opts *mcp.ServerOptions
}{
	{"2026-07-28 round trip", nil},
	{"2025-11-25 request", &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}}},
}

func TestElicitationRoundTrip(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev.name, func(t *testing.T) { testElicitation(t, rev.opts) })
	}
}

func testElicitation(t *testing.T, opts *mcp.ServerOptions) {
	srv := newFakeServer(t, opts)
	srv.addTool("ask", askTool(map[string]any{
		"type":     "object",
		"required": []any{"name"},
		"properties": map[string]any{
			"name":  map[string]any{"type": "string"},
			"color": map[string]any{"type": "string", "enum": []any{"red", "blue"}, "default": "blue"},
		},
	}))
	svc := elicit.New()
	e := mustStart(t, testConfig("el"), srv, withElicit(svc))

	// Nobody installed: declined, with the reason in _meta.
	res := e.call(tools.Caller{}, "mcp__el__ask", "{}")
	if got := resultText(res); !strings.Contains(got, `"action":"decline"`) || !strings.Contains(got, bridge.ReasonKey) {
		t.Errorf("without an answerer the server saw %s, want a decline with its reason", got)
	}
	if !e.logs.Has(slog.LevelWarn, "elicitation not accepted") {
		t.Error("the decline was not logged")
	}

	var asked elicit.Request
	remove := svc.Install(elicit.AnswerFunc(func(_ context.Context, r elicit.Request) (elicit.Result, error) {
		asked = r
		return elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Ada"}}, nil
	}))
	defer remove()
	res = e.call(tools.Caller{}, "mcp__el__ask", "{}")
	if got := resultText(res); got != `{"action":"accept","content":{"color":"blue","name":"Ada"}}` {
		t.Errorf("the server saw %s, want the answer with the default applied", got)
	}
	if asked.Server != "el" || asked.Mode != elicit.ModeForm || asked.Message != "Who are you?" || len(asked.Form.Fields) != 2 {
		t.Errorf("the answerer was asked %+v", asked)
	}

	// The call's own answerer wins over the installed one.
	ch := &tools.Channels{Answerer: elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) {
		return elicit.Result{Action: elicit.Cancel}, nil
	})}
	res = e.reg.Run(context.Background(), tools.Call{Name: "mcp__el__ask", Args: []byte("{}"), Channels: ch})
	if got := resultText(res); got != `{"action":"cancel"}` {
		t.Errorf("with the call's answerer the server saw %s, want its cancel", got)
	}
}

// The tests of held calls run in synctest bubbles: the person's time and
// the silence allowed are on the fake clock, so the round trips before
// the hold never count against it, whatever the load.
func TestElicitationHoldsTheSilenceTimer(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testHold(t, rev.opts) })
		})
	}
}

// Once the person has answered, the silence counts again: a tool that
// then goes quiet is cut after toolCallTimeoutMs. The silence timer was
// stopped during the wait, so only the answer can start it again; without
// that the call would hang for good.
func TestSilenceCountsAgainAfterTheAnswer(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testSilenceAfterAnswer(t, rev.opts) })
		})
	}
}

func testSilenceAfterAnswer(t *testing.T, opts *mcp.ServerOptions) {
	srv := newFakeServer(t, opts)
	ask := askTool(okSchema)
	srv.addTool("ask-then-hang", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, answered := req.Params.InputResponses["q"]; !answered {
			return ask(ctx, req)
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e := startWithSlowPerson(t, "quiet", srv)
	// The test's own bound cancels the call, so that a failure
	// ends the call (and the server's handler) too.
	ctx, cancel := context.WithTimeout(context.Background(), personTakes+waitTimeout)
	defer cancel()
	res := e.reg.Execute(ctx, tools.Caller{}, "mcp__quiet__ask-then-hang", []byte("{}"))
	if ctx.Err() != nil {
		t.Fatal("a tool silent after the answer was never cut")
	}
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "toolCallTimeoutMs (1500ms)") {
		t.Errorf("a tool silent after the answer: err %v, want the toolCallTimeoutMs timeout", res.Err)
	}
}

// A call still running at dispose keeps its timeouts: go-sdk's Close
// waits for it, past the close timeout, and the call must still end at
// toolCallTimeoutMs rather than whenever the server answers.
func TestTimeoutsOutliveDispose(t *testing.T) {
	// On a synctest bubble's clock: the close timeout and the call's are
	// exact, whatever the load.
	synctest.Test(t, testTimeoutsOutliveDispose)
}

func testTimeoutsOutliveDispose(t *testing.T) {
	srv := newFakeServer(t, nil)
	started := make(chan struct{}, 1)
	srv.addTool("quiet", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	cfg := testConfig("late")
	cfg.ToolCallTimeoutMs = 1000
	e := mustStart(t, cfg, srv, withCloseTimeout(100*time.Millisecond))
	// The test's own bound cancels the call, so that a failure ends it.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	done := make(chan tools.Result, 1)
	go func() { done <- e.reg.Execute(ctx, tools.Caller{}, "mcp__late__quiet", []byte("{}")) }()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the call never reached the server")
	}
	if err := e.scope.Dispose(waitTimeout); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if ctx.Err() != nil {
		t.Fatal("a call in flight at dispose was never cut")
	}
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "did not answer within toolCallTimeoutMs (1000ms)") {
		t.Errorf("a call in flight at dispose: err %v, want the toolCallTimeoutMs timeout", res.Err)
	}
}

// The silence a call waiting for a person is allowed in the tests, and
// the time the person takes, well past it: a call not held is cut. (On a
// synctest bubble's clock: seconds that cost no time.)
const (
	holdSilenceMs = 1500
	personTakes   = 3500 * time.Millisecond
)

// startWithSlowPerson starts a client named id on srv, with toolCallTimeoutMs
// holdSilenceMs and a person who takes personTakes to accept {"ok":true}.
func startWithSlowPerson(t *testing.T, id string, srv *fakeServer) *testEnv {
	t.Helper()
	svc := elicit.New()
	cfg := testConfig(id)
	cfg.ToolCallTimeoutMs = holdSilenceMs
	e := mustStart(t, cfg, srv, withElicit(svc))
	t.Cleanup(svc.Install(elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) {
		time.Sleep(personTakes)
		return elicit.Result{Action: elicit.Accept, Content: map[string]any{"ok": true}}, nil
	})))
	return e
}

func testHold(t *testing.T, opts *mcp.ServerOptions) {
	srv := newFakeServer(t, opts)
	srv.addTool("ask", askTool(okSchema))
	e := startWithSlowPerson(t, "hold", srv)
	res := e.call(tools.Caller{}, "mcp__hold__ask", "{}")
	if res.Err != nil || resultText(res) != `{"action":"accept","content":{"ok":true}}` {
		t.Errorf("a call waiting for a person failed: %v %q", res.Err, resultText(res))
	}
}

func TestServerLogMessages(t *testing.T) {
	// A go-sdk server sends nothing before it knows the level: at
	// 2025-11-25 through logging/setLevel, at 2026-07-28 in the call's _meta.
	for _, rev := range revisions {
		t.Run(rev.name, func(t *testing.T) { testServerLog(t, rev.opts) })
	}
}

func testServerLog(t *testing.T, opts *mcp.ServerOptions) {
	srv := newFakeServer(t, opts)
	srv.addTool("log", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, l := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "emergency"} {
			//lint:ignore SA1019 the test drives the deprecated logging feature on purpose.
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: "db", Data: "at " + string(l)})
		}
		//lint:ignore SA1019 as above.
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: map[string]any{"rows": 3}})
		return textResult("logged"), nil
	})
	e := mustStart(t, testConfig("lg"), srv)
	if res := e.call(tools.Caller{}, "mcp__lg__log", "{}"); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := map[string]slog.Level{
		"at debug": slog.LevelDebug, "at info": slog.LevelInfo, "at notice": slog.LevelInfo, "at warning": slog.LevelWarn,
		"at error": slog.LevelError, "at critical": slog.LevelError, "at emergency": slog.LevelError, `{"rows":3}`: slog.LevelInfo,
	}
	levelOf := func(data string) (slog.Level, bool) {
		for _, lv := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			for _, r := range e.logs.Find(lv, "server log") {
				if strings.Contains(r.Attrs, "data="+data) {
					return lv, true
				}
			}
		}
		return 0, false
	}
	eventually(t, "every log message", func() bool {
		for data := range want {
			if _, ok := levelOf(data); !ok {
				return false
			}
		}
		return true
	})
	for data, lv := range want {
		if got, _ := levelOf(data); got != lv {
			t.Errorf("server log %q at %s, want %s", data, got, lv)
		}
	}
	if w := e.logs.Find(slog.LevelWarn, "server log"); len(w) != 1 || !strings.Contains(w[0].Attrs, "logger=db") || !strings.Contains(w[0].Attrs, "severity=warning") {
		t.Errorf("the warning's attributes: %+v, want its logger and severity", w)
	}
}

// levelFilter is a handler that drops records below min.
type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(_ context.Context, l slog.Level) bool { return l >= f.min }

func TestLogLevelReachesTheServer(t *testing.T) {
	for _, rev := range revisions {
		t.Run(rev.name, func(t *testing.T) {
			srv := newFakeServer(t, rev.opts)
			var mu sync.Mutex
			var setLevel, callLevel []any
			srv.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					mu.Lock()
					switch p := req.GetParams().(type) {
					case *mcp.SetLoggingLevelParams:
						setLevel = append(setLevel, string(p.Level))
					case *mcp.CallToolParamsRaw:
						callLevel = append(callLevel, p.GetMeta()[mcp.MetaKeyLogLevel])
					}
					mu.Unlock()
					return next(ctx, method, req)
				}
			})
			srv.addTool("noop", nil)
			e := mustStart(t, testConfig("lv"), srv, func(e *testEnv, o *options) {
				o.logger = slog.New(levelFilter{e.logs, slog.LevelWarn})
			})
			if res := e.call(tools.Caller{}, "mcp__lv__noop", "{}"); res.Err != nil {
				t.Fatal(res.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			if rev.opts == nil {
				if len(setLevel) != 0 || len(callLevel) != 1 || callLevel[0] != "warning" {
					t.Errorf("at 2026-07-28: setLevel %v, call _meta levels %v; want none, and warning in the call", setLevel, callLevel)
				}
			} else if len(setLevel) != 1 || setLevel[0] != "warning" || len(callLevel) != 1 || callLevel[0] != nil {
				t.Errorf("at 2025-11-25: setLevel %v, call _meta levels %v; want warning once, and nothing in the call", setLevel, callLevel)
			}
		})
	}
}

func TestURLElicitationRequired(t *testing.T) {
	srv := newFakeServer(t, nil)
	var mu sync.Mutex
	calls := 0
	srv.addTool("gated", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls%2 == 1 {
			return nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", Message: "sign in", URL: "https://example.com/login", ElicitationID: "e1"}})
		}
		return textResult("in"), nil
	})
	svc := elicit.New()
	e := mustStart(t, testConfig("gt"), srv, withElicit(svc))

	res := e.call(tools.Caller{}, "mcp__gt__gated", "{}")
	if res.Err == nil || !strings.Contains(res.Err.Error(), "requires opening https://example.com/login first") || !strings.Contains(res.Err.Error(), elicit.NoAnswerer) {
		t.Errorf("without an answerer: %v, want the page and why it was not opened", res.Err)
	}
	mu.Lock()
	calls = 0 // the next call is refused again
	mu.Unlock()
	var asked []elicit.Request
	defer svc.Install(elicit.AnswerFunc(func(_ context.Context, r elicit.Request) (elicit.Result, error) {
		asked = append(asked, r)
		return elicit.Result{Action: elicit.Accept}, nil
	}))()
	res = e.call(tools.Caller{}, "mcp__gt__gated", "{}")
	if res.Err != nil || resultText(res) != "in" {
		t.Errorf("after the page was accepted the call went again: %v %q", res.Err, resultText(res))
	}
	if len(asked) != 1 || asked[0].Mode != elicit.ModeURL || asked[0].URL != "https://example.com/login" || asked[0].ElicitationID != "e1" {
		t.Errorf("asked %+v", asked)
	}
}
