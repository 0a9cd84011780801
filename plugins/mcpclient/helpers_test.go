package mcpclient

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpoutput"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every condition wait in these tests.
const waitTimeout = 10 * time.Second

// eventually waits for cond, failing the test after waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// logRecorder keeps every record logged (mcptest.Logs).
type logRecorder = mcptest.Logs

// fakeServer is a go-sdk server reached over in-memory transports, one
// fresh pair per connection attempt, so that tests can crash sessions,
// refuse attempts and count them.
type fakeServer struct {
	t        *testing.T
	srv      *mcp.Server
	attempts atomic.Int32
	// refuse, when set, makes attempts fail at connect.
	refuse atomic.Bool
	// wrap, when set, wraps the client end of each connection.
	wrap func(mcp.Connection) mcp.Connection
	// gate, when set, scripts attempts: each receives true (connect) or
	// false (refuse) from it.
	gate chan bool

	mu       sync.Mutex
	sessions []*mcp.ServerSession
	// listening holds the sessions whose subscriptions/listen the server
	// acknowledged: it has taken them up, and tells them of list changes.
	// modern those on 2026-07-28 (server/discover), which listen; ended
	// those closed.
	listening, modern, ended map[mcp.Session]bool
}

func newFakeServer(t *testing.T, opts *mcp.ServerOptions) *fakeServer {
	f := &fakeServer{t: t, srv: mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, opts), listening: map[mcp.Session]bool{},
		modern: map[mcp.Session]bool{}, ended: map[mcp.Session]bool{}}
	// go-sdk's ServerSession.Close deadlocks when it races the start of a
	// subscriptions/listen request, so crash waits for the subscription;
	// and a list change before it is taken up is told to nobody
	// (waitListening). The acknowledgement is sent once it is.
	f.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				f.mu.Lock()
				f.listening[req.GetSession()] = true
				f.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	f.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "server/discover" && err == nil {
				f.mu.Lock()
				f.modern[req.GetSession()] = true
				f.mu.Unlock()
			}
			return res, err
		}
	})
	t.Cleanup(func() {
		f.mu.Lock()
		sessions := f.sessions
		f.mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
			_ = ss.Wait()
		}
	})
	return f
}

// addTool adds a tool with an object input schema.
func (f *fakeServer) addTool(name string, h mcp.ToolHandler) {
	f.addToolHints(name, nil, h)
}

// addReadOnlyTool adds a tool annotated readOnlyHint: a call of it that
// its server refused to ask mid-call is sent again (revision.go).
func (f *fakeServer) addReadOnlyTool(name string, h mcp.ToolHandler) {
	f.addToolHints(name, &mcp.ToolAnnotations{ReadOnlyHint: true}, h)
}

func (f *fakeServer) addToolHints(name string, hints *mcp.ToolAnnotations, h mcp.ToolHandler) {
	// The change is told only to the sessions listening by then: wait for
	// the newest one, as a server that changes its tools a while after
	// its client connected would.
	f.mu.Lock()
	var newest *mcp.ServerSession
	if n := len(f.sessions); n > 0 {
		newest = f.sessions[n-1]
	}
	modern := newest != nil && f.modern[newest]
	f.mu.Unlock()
	if modern {
		f.waitListening(newest)
	}
	if h == nil {
		h = func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(req.Params.Name + ":" + string(req.Params.Arguments)), nil
		}
	}
	f.srv.AddTool(&mcp.Tool{Name: name, Description: "tool " + name, InputSchema: map[string]any{"type": "object"}, Annotations: hints}, h)
}

func (f *fakeServer) factory() transportFactory {
	return func() mcp.Transport {
		f.attempts.Add(1)
		if f.gate != nil && !<-f.gate {
			return failTransport{errors.New("connection refused by the test script")}
		}
		if f.refuse.Load() {
			return failTransport{errors.New("connection refused by the test")}
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := f.srv.Connect(context.Background(), st, nil)
		if err != nil {
			return failTransport{err}
		}
		f.mu.Lock()
		f.sessions = append(f.sessions, ss)
		f.mu.Unlock()
		go func() {
			_ = ss.Wait() // returns at the latest at the cleanup's Close
			f.mu.Lock()
			f.ended[ss] = true
			f.mu.Unlock()
		}()
		if f.wrap != nil {
			return wrapTransport{ct, f.wrap}
		}
		return ct
	}
}

// crash closes the newest server session, as a server exit would.
func (f *fakeServer) crash() {
	f.mu.Lock()
	ss := f.sessions[len(f.sessions)-1]
	f.mu.Unlock()
	f.waitListening(ss)
	_ = ss.Close()
}

// waitListening waits until the server has taken up the subscriptions/listen
// of ss (2026-07-28), or ss ended: go-sdk's client does not wait for it,
// and the server tells a list change only to the sessions listening when
// it sends it.
func (f *fakeServer) waitListening(ss mcp.Session) {
	eventually(f.t, "the session's subscription", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.listening[ss] || f.ended[ss]
	})
}

type failTransport struct{ err error }

func (t failTransport) Connect(context.Context) (mcp.Connection, error) { return nil, t.err }

type wrapTransport struct {
	inner mcp.Transport
	wrap  func(mcp.Connection) mcp.Connection
}

func (t wrapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return t.wrap(c), nil
}

// textResult is a handler result of text blocks.
func textResult(texts ...string) *mcp.CallToolResult {
	r := &mcp.CallToolResult{}
	for _, s := range texts {
		r.Content = append(r.Content, &mcp.TextContent{Text: s})
	}
	return r
}

// testEnv is one client running on a scope of its own, like an instance.
type testEnv struct {
	t      *testing.T
	reg    *tools.Registry
	store  *attachments.Store
	scope  *host.Scope
	logs   *logRecorder
	srv    *fakeServer
	detail atomic.Value
	clock  *fakeClock
	client atomic.Pointer[client]
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testConfig is a config with fast reconnects.
func testConfig(server string) Config {
	cfg := Defaults()
	cfg.ServerName = server
	cfg.Transport = TransportStdio
	cfg.Command = "unused-in-memory"
	cfg.StartupTimeoutMs = 5000
	cfg.Reconnect.InitialDelayMs = 1
	cfg.Reconnect.MaxDelayMs = 4
	cfg.Reconnect.MaxAttempts = 3
	return cfg
}

type envOption func(*testEnv, *options)

func withStore(e *testEnv, o *options) {
	st, err := attachments.New(e.t.TempDir(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, o.store = st, st
}

// withReadOutput offers mcp_read_output over the store (withStore first)
// on the client's registry, as the mcp-output instance does.
func withReadOutput(e *testEnv, o *options) {
	if o.registry == nil {
		e.reg = tools.New(nil)
		o.registry = e.reg
	}
	s := host.NewScope(context.Background(), "mcp-output", slog.New(e.logs))
	e.t.Cleanup(func() { _ = s.Dispose(waitTimeout) })
	var def *tools.Definition
	if o.store != nil {
		d := mcpoutput.ReadTool(o.store)
		def = &d
	}
	o.output = outputs.NewOffer(s, o.registry, def)
}

func withRegistry(reg *tools.Registry) envOption {
	return func(e *testEnv, o *options) { e.reg, o.registry = reg, reg }
}

// withTransport uses the production transport for the config (stdio
// process or Streamable HTTP).
func withTransport(e *testEnv, o *options) {
	logger := o.logger
	if logger == nil {
		logger = slog.New(e.logs)
	}
	f, cleanup := newTransportFactory(&o.cfg, logger, nil)
	o.transport = f
	e.t.Cleanup(cleanup)
}

func withCloseTimeout(d time.Duration) envOption {
	return func(_ *testEnv, o *options) { o.closeTimeout = d }
}

// startEnv starts a client for cfg against srv and returns its environment
// and start's error. The scope is disposed at cleanup.
func startEnv(t *testing.T, cfg Config, srv *fakeServer, opts ...envOption) (*testEnv, error) {
	t.Helper()
	e := &testEnv{t: t, logs: &logRecorder{}, srv: srv, clock: &fakeClock{now: time.Unix(1e9, 0)}}
	e.detail.Store("")
	o := options{cfg: cfg, now: e.clock.Now}
	if srv != nil {
		o.transport = srv.factory()
	}
	for _, opt := range opts {
		opt(e, &o)
	}
	if o.registry == nil {
		e.reg = tools.New(nil)
		o.registry = e.reg
	}
	o.detail = func(s string) { e.detail.Store(s) }
	e.scope = host.NewScope(context.Background(), "inst-"+cfg.ServerName, slog.New(e.logs))
	t.Cleanup(func() {
		if err := e.scope.Dispose(waitTimeout); err != nil {
			t.Errorf("dispose: %v", err)
		}
		if t.Failed() {
			t.Logf("logs:\n%s", e.logs.Dump())
		}
	})
	c, err := start(e.scope, o)
	e.client.Store(c)
	return e, err
}

// mustStart is startEnv that fails the test on a start error.
func mustStart(t *testing.T, cfg Config, srv *fakeServer, opts ...envOption) *testEnv {
	t.Helper()
	e, err := startEnv(t, cfg, srv, opts...)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return e
}

// names returns the registered public names of server.
func (e *testEnv) names() []string {
	var out []string
	for _, d := range e.reg.List(tools.Caller{}) {
		if d.Origin.Server == e.scope.ID()[len("inst-"):] {
			out = append(out, d.Name)
		}
	}
	return out
}

func (e *testEnv) call(caller tools.Caller, public string, args string) tools.Result {
	return e.reg.Execute(context.Background(), caller, public, []byte(args))
}

func (e *testEnv) Detail() string { return e.detail.Load().(string) }

func resultText(r tools.Result) string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "|")
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
