package mcpclient

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

func TestReconnectsAndServesCalls(t *testing.T) {
	// The attempts are scripted (gate), not refused for a while: retries
	// 1ms, 2ms and 4ms apart outran a test slow to lift a refusal, which
	// then saw the budget spent.
	srv := echoServer(t, "a")
	srv.gate = make(chan bool)
	go func() { srv.gate <- true }()
	e := mustStart(t, testConfig("rc"), srv)

	// An outage: the tools stay registered and fail.
	srv.crash()
	srv.gate <- false // attempt 1/3 fails; attempt 2/3 waits on the gate
	res := e.call(tools.Caller{}, "mcp__rc__a", "{}")
	if res.Err == nil || !strings.Contains(res.Err.Error(), "mcp-client(rc): not connected") {
		t.Errorf("call during the outage: %v", res.Err)
	}
	if diff := cmp.Diff([]string{"mcp__rc__a"}, e.names()); diff != "" {
		t.Errorf("registered during the outage (-want +got):\n%s", diff)
	}

	srv.gate <- true
	eventually(t, "recovery", func() bool { return e.logs.Has(slog.LevelInfo, "reconnected and re-synced tools") })
	if !e.logs.Has(slog.LevelWarn, "mcp-client(rc): connection lost; reconnecting in 1ms (attempt 1/3)") {
		t.Errorf("no reconnecting log:\n%s", e.logs.Dump())
	}
	if diff := cmp.Diff([]string{"mcp__rc__a"}, e.names()); diff != "" {
		t.Errorf("registered after recovery (-want +got):\n%s", diff)
	}
	if res := e.call(tools.Caller{}, "mcp__rc__a", "{}"); res.Err != nil {
		t.Errorf("call after recovery: %v", res.Err)
	}
	eventually(t, "the detail", func() bool { return e.Detail() == "connected, 1 tool" })
}

func TestGivesUpAtTheCap(t *testing.T) {
	srv := echoServer(t, "a")
	e := mustStart(t, testConfig("cap"), srv)
	srv.refuse.Store(true)
	srv.crash()
	eventually(t, "give up", func() bool { return strings.HasPrefix(e.Detail(), "gave up after 3 attempts") })
	if got := srv.attempts.Load(); got != 1+3 {
		t.Errorf("connected %d times, want the first connection and 3 retries", got)
	}
	if got := e.names(); len(got) != 0 {
		t.Errorf("still registered: %v", got)
	}
	if !e.logs.Has(slog.LevelError, "mcp-client(cap): giving up after 3 consecutive failed reconnect attempts — tools unregistered") {
		t.Errorf("no give-up log:\n%s", e.logs.Dump())
	}
	for n, d := range []string{"1ms (attempt 1/3)", "2ms (attempt 2/3)", "4ms (attempt 3/3)"} {
		verb := "connection failed; retrying in "
		if n == 0 {
			verb = "connection lost; reconnecting in "
		}
		if !e.logs.Has(slog.LevelWarn, verb+d) {
			t.Errorf("no log %q:\n%s", verb+d, e.logs.Dump())
		}
	}
}

func TestBudget(t *testing.T) {
	cfg := testConfig("bud")
	cfg.Reconnect.MaxAttempts = 2
	t.Run("uptime past maxDelayMs resets it", func(t *testing.T) {
		srv := echoServer(t, "a")
		srv.gate = make(chan bool)
		go func() { srv.gate <- true }()
		e := mustStart(t, cfg, srv)
		srv.crash()
		srv.gate <- false // attempt 1/2 fails
		srv.gate <- true  // attempt 2/2 recovers
		eventually(t, "recovery", func() bool { return e.logs.Has(slog.LevelInfo, "(attempt 2/2)") })
		e.clock.Advance(ms(cfg.Reconnect.MaxDelayMs))
		srv.crash()
		srv.gate <- true
		eventually(t, "the second recovery", func() bool { return len(e.logs.Find(slog.LevelInfo, "reconnected")) == 2 })
		if got := len(e.logs.Find(slog.LevelWarn, "connection lost; reconnecting in 1ms (attempt 1/2)")); got != 2 {
			t.Errorf("the second outage started at attempt 1 %d times, want 2:\n%s", got, e.logs.Dump())
		}
	})
	t.Run("a crash loop with brief successes still exhausts it", func(t *testing.T) {
		srv := echoServer(t, "a")
		srv.gate = make(chan bool)
		go func() { srv.gate <- true }()
		e := mustStart(t, cfg, srv)
		for i := range 2 {
			srv.crash()
			srv.gate <- true
			eventually(t, "recovery", func() bool { return len(e.logs.Find(slog.LevelInfo, "reconnected")) == i+1 })
		}
		srv.crash()
		eventually(t, "give up", func() bool { return strings.HasPrefix(e.Detail(), "gave up") })
		if got := e.names(); len(got) != 0 {
			t.Errorf("still registered: %v", got)
		}
	})
}

// blockingClose makes Close of the client's connections wait for release,
// and records events in order.
type blockingClose struct {
	mu      sync.Mutex
	events  []string
	release chan struct{}
	closing chan struct{} // receives when a Close begins
}

func newBlockingClose() *blockingClose {
	return &blockingClose{release: make(chan struct{}), closing: make(chan struct{}, 16)}
}

func (b *blockingClose) note(ev string) {
	b.mu.Lock()
	b.events = append(b.events, ev)
	b.mu.Unlock()
}

func (b *blockingClose) log() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

type blockingConn struct {
	mcp.Connection
	b    *blockingClose
	once sync.Once
}

func (c *blockingConn) Close() error {
	c.once.Do(func() {
		c.b.closing <- struct{}{}
		<-c.b.release
		c.b.note("closed")
	})
	return c.Connection.Close()
}

// closeBlockingServer serves tool "a" over connections whose Close waits
// for b.release, and notes each connect and close in b.
func closeBlockingServer(t *testing.T) (*fakeServer, *blockingClose) {
	srv := echoServer(t, "a")
	b := newBlockingClose()
	srv.wrap = func(c mcp.Connection) mcp.Connection { b.note("connect"); return &blockingConn{Connection: c, b: b} }
	return srv, b
}

func TestCloseBarrier(t *testing.T) {
	t.Run("the next attempt waits for the failed generation's close", func(t *testing.T) {
		srv, b := closeBlockingServer(t)
		var lists atomic.Int32
		listMiddleware(srv, func(*mcp.ListToolsResult) error {
			if lists.Add(1) == 1 {
				return errors.New("first discovery fails")
			}
			return nil
		})
		done := make(chan *testEnv)
		go func() { done <- mustStart(t, testConfig("bar"), srv) }()
		<-b.closing
		close(b.release)
		e := <-done
		eventually(t, "the second connection", func() bool { return slices.Equal(e.names(), []string{"mcp__bar__a"}) })
		if diff := cmp.Diff([]string{"connect", "closed", "connect"}, b.log()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("after a crash the old connection closes before the next starts", func(t *testing.T) {
		srv, b := closeBlockingServer(t)
		e := mustStart(t, testConfig("bar2"), srv)
		srv.crash()
		<-b.closing
		if got := srv.attempts.Load(); got != 1 {
			t.Errorf("a new connection started while the old one was closing (%d attempts)", got)
		}
		close(b.release)
		eventually(t, "the reconnect", func() bool { return e.logs.Has(slog.LevelInfo, "reconnected") })
		if diff := cmp.Diff([]string{"connect", "closed", "connect"}, b.log()[:3]); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("reconnect stops when close never arrives", func(t *testing.T) {
		srv, b := closeBlockingServer(t)
		t.Cleanup(func() { close(b.release) })
		listMiddleware(srv, func(*mcp.ListToolsResult) error { return errors.New("discovery fails") })
		e := mustStart(t, testConfig("hang"), srv, withCloseTimeout(20*time.Millisecond))
		if !e.logs.Has(slog.LevelError, "mcp-client(hang): failed generation did not close within 20ms — reconnect stopped to avoid overlapping server processes") {
			t.Errorf("no close-barrier error:\n%s", e.logs.Dump())
		}
		if got := srv.attempts.Load(); got != 1 {
			t.Errorf("connected %d times after a close that never came", got)
		}
		if err := e.scope.Dispose(waitTimeout); err != nil {
			t.Errorf("dispose: %v", err)
		}
	})
	t.Run("disposal is bounded when close never arrives", func(t *testing.T) {
		srv, b := closeBlockingServer(t)
		t.Cleanup(func() { close(b.release) })
		e := mustStart(t, testConfig("dh"), srv, withCloseTimeout(20*time.Millisecond))
		if err := e.scope.Dispose(waitTimeout); err != nil {
			t.Errorf("dispose: %v", err)
		}
		if !e.logs.Has(slog.LevelError, "connection did not close within 20ms during disposal") {
			t.Errorf("no disposal error:\n%s", e.logs.Dump())
		}
		if got := e.reg.List(tools.Caller{}); len(got) != 0 {
			t.Errorf("still registered: %v", got)
		}
	})
}

func TestDisposal(t *testing.T) {
	t.Run("during backoff it cancels the reconnect", func(t *testing.T) {
		srv := echoServer(t, "a")
		cfg := testConfig("bo")
		cfg.Reconnect.InitialDelayMs, cfg.Reconnect.MaxDelayMs = 60000, 60000
		e := mustStart(t, cfg, srv)
		srv.crash()
		eventually(t, "the backoff", func() bool { return e.Detail() == "reconnecting 1/3 in 1m0s" })
		if err := e.scope.Dispose(waitTimeout); err != nil {
			t.Fatal(err)
		}
		if got := srv.attempts.Load(); got != 1 {
			t.Errorf("connected %d times", got)
		}
		if got := e.reg.List(tools.Caller{}); len(got) != 0 {
			t.Errorf("still registered: %v", got)
		}
	})
	t.Run("a close after dispose schedules nothing", func(t *testing.T) {
		srv := echoServer(t, "a")
		e := mustStart(t, testConfig("ad"), srv)
		if err := e.scope.Dispose(waitTimeout); err != nil {
			t.Fatal(err)
		}
		srv.crash()
		if got := srv.attempts.Load(); got != 1 || e.logs.Has(slog.LevelWarn, "reconnecting") {
			t.Errorf("connected %d times after dispose", got)
		}
	})
	t.Run("during an in-flight re-sync it leaks nothing", func(t *testing.T) {
		srv := echoServer(t, "a")
		listing := make(chan struct{})
		var n atomic.Int32
		srv.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" && n.Add(1) == 2 {
					close(listing)
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
		e := mustStart(t, testConfig("inf"), srv)
		srv.addTool("b", nil)
		<-listing
		if err := e.scope.Dispose(waitTimeout); err != nil {
			t.Fatal(err)
		}
		if got := e.reg.List(tools.Caller{}); len(got) != 0 {
			t.Errorf("still registered: %v", got)
		}
		if e.logs.Has(slog.LevelError, "re-sync failed") {
			t.Error("a re-sync cancelled by dispose logged an error")
		}
	})
	t.Run("a pending connect is dropped silently", func(t *testing.T) {
		srv := echoServer(t, "a")
		srv.gate = make(chan bool)
		go func() { srv.gate <- true }()
		e := mustStart(t, testConfig("pc"), srv)
		srv.crash()
		eventually(t, "the reconnect attempt", func() bool { return srv.attempts.Load() == 2 })
		// The attempt waits on the gate; dispose, then let it fail.
		disposed := make(chan error)
		go func() { disposed <- e.scope.Dispose(waitTimeout) }()
		<-e.scope.Context().Done()
		srv.gate <- false
		if err := <-disposed; err != nil {
			t.Fatal(err)
		}
		if e.logs.Has(slog.LevelWarn, "connection attempt failed") {
			t.Errorf("a failure after dispose was logged:\n%s", e.logs.Dump())
		}
	})
}

func TestReconnectDisabled(t *testing.T) {
	cfg := testConfig("off")
	cfg.Reconnect.Enabled = false
	t.Run("a lost connection keeps the tools, failing", func(t *testing.T) {
		srv := echoServer(t, "a")
		e := mustStart(t, cfg, srv)
		srv.crash()
		eventually(t, "the loss", func() bool { return strings.HasPrefix(e.Detail(), "disconnected (reconnect disabled): ") })
		if !e.logs.Has(slog.LevelError, "connection lost and reconnect is disabled — registered tools will fail") {
			t.Errorf("no manual-recovery log:\n%s", e.logs.Dump())
		}
		if diff := cmp.Diff([]string{"mcp__off__a"}, e.names()); diff != "" {
			t.Errorf("registered (-want +got):\n%s", diff)
		}
		res := e.call(tools.Caller{}, "mcp__off__a", "{}")
		if res.Err == nil || !strings.Contains(res.Err.Error(), "reconnect is disabled") {
			t.Errorf("call = %v", res.Err)
		}
		if got := srv.attempts.Load(); got != 1 {
			t.Errorf("connected %d times", got)
		}
	})
	t.Run("a failed first connection logs no tools", func(t *testing.T) {
		srv := echoServer(t, "a")
		srv.refuse.Store(true)
		e := mustStart(t, cfg, srv)
		if !e.logs.Has(slog.LevelError, "connection failed and reconnect is disabled — no tools were registered") {
			t.Errorf("no log:\n%s", e.logs.Dump())
		}
		if got := srv.attempts.Load(); got != 1 {
			t.Errorf("connected %d times", got)
		}
	})
}

// TestReconnectsAreMetered: dsh_upstream_up is 1 while connected and 0
// during an outage, and dsh_upstream_reconnects_total counts the attempts
// (0 from the start, so that an alert on increase() sees the first).
func TestReconnectsAreMetered(t *testing.T) {
	// Scripted attempts (gate): with a refusal lifted by the test, the
	// retry that read it could be the first or a later one, or none before
	// the budget was spent.
	srv := echoServer(t, "a")
	srv.gate = make(chan bool)
	go func() { srv.gate <- true }()
	e := mustStart(t, testConfig("rc"), srv)
	value := func(name string) float64 {
		families, err := e.scope.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, s := range f.GetMetric() {
				if f.GetName() == name && len(s.GetLabel()) == 2 && s.GetLabel()[0].GetValue() == "inst-rc" && s.GetLabel()[1].GetValue() == "rc" {
					return s.GetGauge().GetValue() + s.GetCounter().GetValue()
				}
			}
		}
		return -1
	}
	if up, reconnects := value("dsh_upstream_up"), value("dsh_upstream_reconnects_total"); up != 1 || reconnects != 0 {
		t.Errorf("connected: up %v, reconnects %v; want 1 and 0", up, reconnects)
	}
	srv.crash()
	srv.gate <- false // attempt 1/3 fails
	// Attempt 2/3 waits on the gate: the outage goes on.
	if up := value("dsh_upstream_up"); up != 0 {
		t.Errorf("during the outage: up %v, want 0", up)
	}
	srv.gate <- true // attempt 2/3 connects
	eventually(t, "recovery", func() bool { return e.Detail() == "connected, 1 tool" })
	if up, reconnects := value("dsh_upstream_up"), value("dsh_upstream_reconnects_total"); up != 1 || reconnects != 2 {
		t.Errorf("after recovery: up %v, reconnects %v; want 1 and 2 attempts", up, reconnects)
	}
}
