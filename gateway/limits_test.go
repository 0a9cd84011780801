package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// linesWith returns the lines of log containing sub.
func linesWith(log *mcptest.SyncBuffer, sub string) []string {
	var out []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// limited is a gateway of cfg served by serve on 127.0.0.1 with o, on a scope the
// test disposes itself (dispose) to read the lines written at the end.
type limited struct {
	g    *Gateway
	addr string // host:port
	url  string
	log  *mcptest.SyncBuffer
	s    *host.Scope
	once sync.Once
}

func serveLimited(t *testing.T, reg *tools.Registry, cfg Config, o serveOptions) *limited {
	t.Helper()
	l := &limited{log: &mcptest.SyncBuffer{}}
	logger := slog.New(slog.NewTextHandler(l.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l.s = host.NewScope(context.Background(), "test", logger)
	t.Cleanup(l.dispose(t))
	g, err := New(l.s, reg, &cfg, &Deps{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// Each tally writes its line at the dispose, never mid-test: the tests
	// count refusals as one line, which a 5 s interval split whenever a
	// loaded machine made the test outlast it.
	if o.tally == 0 {
		o.tally = time.Hour
	}
	for _, tl := range []*tally{g.uninitialized, g.calls.refused} {
		tl.setInterval(o.tally)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.g, l.addr, l.url = g, ln.Addr().String(), serve(l.s, g, ln, o)
	return l
}

func (l *limited) dispose(t *testing.T) func() {
	return func() {
		l.once.Do(func() {
			if err := l.s.Dispose(wait); err != nil {
				t.Error(err)
			}
		})
	}
}

// dial opens a raw connection to l with a deadline for everything on it.
func (l *limited) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", l.addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(wait))
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes a raw request on c and reads the response, body included.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, req string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// wantClosed asserts that the server closes c (EOF or reset), well before
// c's deadline.
func wantClosed(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	_, err := br.ReadByte()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection is still open: %v", err)
	}
}

func rawInitialize(addr, extra string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
		addr, extra, len(initialize), initialize)
}

// openSession initializes a session over HTTP and returns its status and
// session ID; the session stays open.
func openSession(t *testing.T, url string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(body)
}

// sendInitialized ends the handshake of session id.
func sendInitialized(t *testing.T, url, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("notifications/initialized: %s", resp.Status)
	}
}

func httpSessions(g *Gateway) int {
	n := 0
	for ss := range g.server.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// TestConnectionCap: past maxConnections a connection is answered 503 with
// the reason and closed; a freed place is taken again; the refusals are one
// log line with their number.
func TestConnectionCap(t *testing.T) {
	const max, extra = 8, 5
	// The held connections send nothing: no header timeout may close
	// them, and free their places, while the test counts on them.
	l := serveLimited(t, tools.New(nil), Config{Limits: Limits{MaxConnections: max, MaxConnectionsPerCaller: max}}, serveOptions{readHeader: time.Hour})
	held := make([]net.Conn, max)
	for i := range held {
		held[i] = l.dial(t)
	}
	for range extra {
		c := l.dial(t)
		br := bufio.NewReader(c)
		resp, body := roundTrip(t, c, br, "GET /mcp HTTP/1.1\r\nHost: "+l.addr+"\r\n\r\n")
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "maxConnections") {
			t.Fatalf("connection past the cap: %d %q, want 503 naming maxConnections", resp.StatusCode, body)
		}
		wantClosed(t, c, br)
		c.Close()
	}
	if got := linesWith(l.log, "refused connections"); len(got) != 0 {
		t.Errorf("refusals logged before the interval ended: %q", got)
	}
	for _, c := range held {
		c.Close()
	}
	// The server sees the closes asynchronously: retry until a place is free.
	mcptest.WaitFor(t, wait, "a connection accepted after the held ones closed", func() bool {
		c := l.dial(t)
		defer c.Close()
		resp, _ := roundTrip(t, c, bufio.NewReader(c), rawInitialize(l.addr, ""))
		return resp.StatusCode == http.StatusOK
	})
	l.dispose(t)()
	lines := linesWith(l.log, "refused connections")
	if len(lines) != 1 || !strings.Contains(lines[0], "refused=") {
		t.Fatalf("refusal log lines = %q, want one with the count", lines)
	}
	var n int
	fmt.Sscanf(lines[0][strings.Index(lines[0], "refused=")+len("refused="):], "%d", &n)
	if n < extra {
		t.Errorf("refused=%d in the log, want at least %d", n, extra)
	}
}

// TestSessionCap: past maxSessions an initialize is answered 503 with the
// reason; a deleted session frees its place; one log line counts the
// refusals.
func TestSessionCap(t *testing.T) {
	const max = 5
	l := serveLimited(t, tools.New(nil), Config{Limits: Limits{MaxSessions: max, MaxSessionsPerCaller: max}}, serveOptions{})
	var ids []string
	for range max {
		status, id, _ := openSession(t, l.url)
		if status != http.StatusOK || id == "" {
			t.Fatalf("initialize under the cap: %d, session %q", status, id)
		}
		ids = append(ids, id)
	}
	for range 3 {
		status, id, body := openSession(t, l.url)
		if status != http.StatusServiceUnavailable || id != "" || !strings.Contains(body, "maxSessions") {
			t.Fatalf("initialize past the cap: %d, session %q, %q; want 503 naming maxSessions", status, id, body)
		}
	}
	del, _ := http.NewRequest(http.MethodDelete, l.url, nil)
	del.Header.Set("Mcp-Session-Id", ids[0])
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if status, id, _ := openSession(t, l.url); status != http.StatusOK || id == "" {
		t.Fatalf("initialize after a DELETE: %d, session %q", status, id)
	}
	l.dispose(t)()
	if lines := linesWith(l.log, "refused sessions"); len(lines) != 1 || !strings.Contains(lines[0], "refused=3") {
		t.Fatalf("refusal log lines = %q, want one with refused=3", lines)
	}
}

// TestSessionTimeout: a session idle past sessionTimeout is ended; its ID
// then gets 404, so its client starts a new one.
func TestSessionTimeout(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{Limits: Limits{SessionTimeout: 100 * time.Millisecond}}, serveOptions{})
	status, id, _ := openSession(t, l.url)
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", status, id)
	}
	mcptest.WaitFor(t, wait, "the idle session ended", func() bool { return httpSessions(l.g) == 0 })
	c := l.dial(t)
	resp, _ := roundTrip(t, c, bufio.NewReader(c), rawInitialize(l.addr, "Mcp-Session-Id: "+id+"\r\n"))
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("request on the expired session: %d, want 404", resp.StatusCode)
	}
}

// TestIdleConnectionClosed: a keep-alive connection idle past the idle
// timeout is closed by the server.
func TestIdleConnectionClosed(t *testing.T) {
	const idle = 100 * time.Millisecond
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{idle: idle})
	c := l.dial(t)
	br := bufio.NewReader(c)
	// Timed from before the request: the server arms the idle timeout
	// after its answer, so the close cannot come sooner than idle from
	// here, however the test is scheduled.
	start := time.Now()
	if resp, _ := roundTrip(t, c, br, rawInitialize(l.addr, "")); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("initialize: %d (close %v), want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	wantClosed(t, c, br)
	if d := time.Since(start); d < idle {
		t.Errorf("closed after %v, before the idle timeout", d)
	}
}

// TestSlowHeadersAndBodyCut: a request whose headers, or whose POST body,
// do not arrive in time loses its connection.
func TestSlowHeadersAndBodyCut(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{readHeader: 100 * time.Millisecond, readBody: 100 * time.Millisecond})
	t.Run("headers", func(t *testing.T) {
		c := l.dial(t)
		io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+l.addr+"\r\n")
		br := bufio.NewReader(c)
		// net/http may answer 408 before closing.
		if line, err := br.ReadString('\n'); err == nil && !strings.Contains(line, "408") {
			t.Fatalf("answer to slow headers: %q", line)
		}
		wantClosed(t, c, br)
	})
	t.Run("body", func(t *testing.T) {
		c := l.dial(t)
		io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+l.addr+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\"")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Fatalf("a body that never arrives was answered %d", resp.StatusCode)
			}
		}
		wantClosed(t, c, br)
	})
}

// TestUnauthorizedConnectionClosed: a 401 closes its connection.
func TestUnauthorizedConnectionClosed(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{token: "a-long-enough-test-token"})
	c := l.dial(t)
	br := bufio.NewReader(c)
	resp, _ := roundTrip(t, c, br, rawInitialize(l.addr, ""))
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("without the token: %d (Connection: close %v), want 401 and close", resp.StatusCode, resp.Close)
	}
	wantClosed(t, c, br)
}

// TestLongRequestsOutliveTimeouts: the read-body and idle timeouts do not
// cut a tool call that outlasts them, nor the GET event stream.
func TestLongRequestsOutliveTimeouts(t *testing.T) {
	// short is the timeouts; the client's own steps (dial, headers, the
	// next request on a kept-alive connection) must fit well inside it,
	// also on a loaded machine, or they would be cut instead.
	const short = 200 * time.Millisecond
	reg := tools.New(nil)
	register(t, reg, tools.Definition{
		Name:        "slow",
		Description: "Answers after a while.",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			select {
			case <-time.After(3 * short):
				return tools.Output{Value: "done", Content: []tools.Content{tools.Text("done")}}, nil
			case <-ctx.Done():
				return tools.Output{}, ctx.Err()
			}
		},
	})
	// The header timeout is not what this test is about: left at its
	// default, a stalled client between dial and headers is not cut.
	l := serveLimited(t, reg, Config{}, serveOptions{readBody: short, idle: short})
	changed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "slow-client", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
	if err != nil || res.IsError {
		t.Fatalf("slow call: %v %v", err, res)
	}
	// The GET stream has now been open for several timeouts.
	register(t, reg, echo("added"))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed on the GET stream after the timeouts")
	}
}

// TestUndeliveredNotificationsOneLine: one change with many sessions
// without a GET stream writes no line per session, only one count.
func TestUndeliveredNotificationsOneLine(t *testing.T) {
	const sessions = 40
	reg := tools.New(nil)
	l := serveLimited(t, reg, Config{}, serveOptions{})
	l.g.undelivered.setInterval(time.Hour) // the line is written at Close
	synced := make(chan struct{}, 10)
	l.g.syncMu.Lock()
	l.g.afterSync = func(added, removed int, err error) { synced <- struct{}{} }
	l.g.syncMu.Unlock()
	for range sessions {
		status, id, _ := openSession(t, l.url)
		if status != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d %q", status, id)
		}
		// Only a client done with the handshake is sent list_changed.
		sendInitialized(t, l.url, id)
	}
	register(t, reg, echo("added"))
	select {
	case <-synced:
	case <-timeAfter():
		t.Fatal("no sync after the change")
	}
	// go-sdk notifies a moment after the change, from a timer of its own.
	mcptest.WaitFor(t, wait, "the notifications sent", func() bool {
		l.g.undelivered.mu.Lock()
		defer l.g.undelivered.mu.Unlock()
		return l.g.undelivered.n == sessions
	})
	if got := linesWith(l.log, "calling notifications"); len(got) != 0 {
		t.Errorf("%d per-session lines, e.g. %q", len(got), got[0])
	}
	if got := linesWith(l.log, "undelivered"); len(got) != 0 {
		t.Errorf("count written before the interval ended: %q", got)
	}
	l.dispose(t)()
	lines := linesWith(l.log, "undelivered")
	if len(lines) != 1 || !strings.Contains(lines[0], fmt.Sprintf("undelivered=%d", sessions)) {
		t.Fatalf("lines = %q, want one with undelivered=%d", lines, sessions)
	}
}

// TestTally: events within an interval are one line; later events another;
// the line is written once the interval has passed, and at Stop.
//
// The grouping is driven by flush, what the interval's timer calls, under
// an interval that never passes: with a short one, a test stalled past it
// between two Adds (a loaded machine) would see them split.
func TestTally(t *testing.T) {
	lines := make(chan int, 10)
	next := func() int {
		t.Helper()
		select {
		case n := <-lines:
			return n
		case <-time.After(wait):
			t.Fatal("no line written")
			return 0
		}
	}
	tl := newTally(time.Hour, func(n int) { lines <- n })
	for range 100 {
		tl.Add()
	}
	tl.flush()
	if n := next(); n != 100 {
		t.Errorf("first line counts %d, want 100", n)
	}
	tl.Add()
	tl.Add()
	tl.flush()
	if n := next(); n != 2 {
		t.Errorf("second line counts %d, want 2", n)
	}
	tl.flush()
	if len(lines) != 0 {
		t.Errorf("a line with nothing counted: %d", <-lines)
	}
	tl.Add()
	tl.Stop() // writes the pending count at once
	select {
	case n := <-lines:
		if n != 1 {
			t.Errorf("line at Stop counts %d, want 1", n)
		}
	default:
		t.Error("Stop did not write the pending count")
	}
	tl.Add()
	tl.Stop()
	if len(lines) != 0 {
		t.Errorf("a line after Stop: %d", <-lines)
	}

	// The interval's timer writes the line on its own.
	short := newTally(time.Millisecond, func(n int) { lines <- n })
	defer short.Stop()
	short.Add()
	if n := next(); n != 1 {
		t.Errorf("line after the interval counts %d, want 1", n)
	}
}

func TestMaxConnections(t *testing.T) {
	tests := []struct {
		configured int
		nofile     uint64
		want       int
		lowered    bool
	}{
		{0, 0, DefaultMaxConnections, false},
		{0, 1 << 20, DefaultMaxConnections, false},
		{0, 1024, (1024 - fdReserve) / 2, false},
		{100, 1024, 100, false},
		{5000, 1024, (1024 - fdReserve) / 2, true},
		{5000, 1 << 20, 5000, false},
		{0, 100, 1, false},
	}
	for _, tt := range tests {
		got, why := maxConnections(tt.configured, tt.nofile)
		if got != tt.want || (why != "") != tt.lowered {
			t.Errorf("maxConnections(%d, %d) = %d, %q; want %d, lowered %v", tt.configured, tt.nofile, got, why, tt.want, tt.lowered)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tt := range []struct {
		l    Limits
		want string
	}{
		{Limits{}, ""},
		{Limits{MaxConnections: 10, MaxSessions: 10, SessionTimeout: time.Minute}, ""},
		{Limits{MaxConnections: -1}, "maxConnections"},
		{Limits{MaxSessions: -1}, "maxSessions"},
		{Limits{SessionTimeout: -time.Second}, "sessionTimeout"},
		{Limits{MaxCallsPerSession: -1}, "maxCallsPerSession"},
		{Limits{MaxCalls: -1}, "maxCalls"},
	} {
		err := tt.l.Validate()
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tt.l, err, tt.want)
		}
	}
}

// TestPluginLimits: the entry's keys reach the listener.
func TestPluginLimits(t *testing.T) {
	h := testHost(t)
	update(t, h, "plugins:\n  - id: gateway\n    name: gateway\n    config: {http: 127.0.0.1:0, maxSessions: 1, sessionTimeout: 1m, maxConnections: 50}\n")
	url := waitGateway(t, h, host.StateActive, nil).Detail
	if status, _, _ := openSession(t, url); status != http.StatusOK {
		t.Fatalf("first session: %d", status)
	}
	if status, _, body := openSession(t, url); status != http.StatusServiceUnavailable {
		t.Fatalf("second session with maxSessions 1: %d %q, want 503", status, body)
	}
}

// TestUnsentBodyOfAnyMethodCut: a request other than POST that declares a
// body and never sends it loses its connection too. net/http reads what is
// left of a small body after the handler, to reuse the connection; without
// a deadline that read waits forever, and the connection is held.
func TestUnsentBodyOfAnyMethodCut(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{readBody: 100 * time.Millisecond, idle: 100 * time.Millisecond})
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		t.Run(method, func(t *testing.T) {
			c := l.dial(t)
			io.WriteString(c, method+" /mcp HTTP/1.1\r\nHost: "+l.addr+"\r\nAccept: text/event-stream\r\nContent-Length: 100\r\n\r\n")
			br := bufio.NewReader(c)
			if resp, err := http.ReadResponse(br, nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			wantClosed(t, c, br)
		})
	}
}

// TestSessionCapCountsAnOpeningOnce: an initialize in flight counts once
// toward maxSessions, not twice (as its opening and as the session go-sdk
// creates before reading its body), so it cannot refuse a client the cap
// has room for; a slow body must not hold two places.
func TestSessionCapCountsAnOpeningOnce(t *testing.T) {
	const max = 2
	// The slow body is held back until the test sends it: no body
	// timeout may cut it first.
	l := serveLimited(t, tools.New(nil), Config{Limits: Limits{MaxSessions: max, MaxSessionsPerCaller: max}}, serveOptions{readBody: time.Hour})
	slow := l.dial(t)
	req := rawInitialize(l.addr, "")
	io.WriteString(slow, req[:len(req)-5]) // the body's end is held back
	mcptest.WaitFor(t, wait, "the slow initialize's session created", func() bool { return httpSessions(l.g) == 1 })
	if status, id, body := openSession(t, l.url); status != http.StatusOK || id == "" {
		t.Fatalf("initialize with one of %d places taken: %d, session %q, %q", max, status, id, body)
	}
	if status, _, _ := openSession(t, l.url); status != http.StatusServiceUnavailable {
		t.Fatalf("initialize with the slow one and one session open: %d, want 503", status)
	}
	io.WriteString(slow, req[len(req)-5:])
	if resp, _ := roundTrip(t, slow, bufio.NewReader(slow), ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("the slow initialize: %d", resp.StatusCode)
	}
}

// TestOversizedBodyAnswerThenEOF: a body past go-sdk's limit is answered
// 413, and the connection then ends in order (EOF): net/http half-closes
// it before closing, which the connection cap's wrapper must let through,
// or the client is reset instead.
func TestOversizedBodyAnswerThenEOF(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{})
	c := l.dial(t)
	const size = 5 << 20 // over go-sdk's 4 MiB default
	io.WriteString(c, fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", l.addr, size))
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		c.Write(make([]byte, size)) // fails once the server is gone
	}()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d, want 413", resp.StatusCode)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the answer: %v, want EOF (a half-close, not a reset)", err)
	}
	c.Close()
	<-wrote
}
