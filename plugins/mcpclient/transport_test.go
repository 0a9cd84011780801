package mcpclient

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

func TestStdioStartFailureIsRetried(t *testing.T) {
	cfg := testConfig("nope")
	cfg.Command = "/nonexistent/mcp-server"
	cfg.Reconnect.MaxAttempts = 1
	e := mustStart(t, cfg, nil, withTransport)
	eventually(t, "give up", func() bool { return strings.HasPrefix(e.Detail(), "gave up after 1 attempts") })
	if !strings.Contains(e.Detail(), `start "/nonexistent/mcp-server"`) {
		t.Errorf("detail = %q", e.Detail())
	}
}

// httpServer is a Streamable HTTP MCP server on 127.0.0.1 whose sessions a
// test can expire, and which it can stop and start again on the same
// address.
type httpServer struct {
	t       *testing.T
	server  *mcp.Server
	handler http.Handler
	addr    string
	ts      *httptest.Server

	mu      sync.Mutex
	auth    []string
	last    string // the last session id seen
	expired string
	// hold, when set, keeps the stream of each tools/call response open
	// after the response (see holdCalls).
	hold *holding
}

func newHTTPServer(t *testing.T) *httpServer {
	h := &httpServer{t: t, server: mcp.NewServer(&mcp.Implementation{Name: "http", Version: "1"}, nil)}
	h.server.AddTool(&mcp.Tool{Name: "ping", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("pong"), nil
		})
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server }, nil)
	h.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		h.mu.Lock()
		h.auth = append(h.auth, r.Header.Get("Authorization"))
		if id != "" {
			h.last = id
		}
		expired := id != "" && id == h.expired
		hold := h.hold
		h.mu.Unlock()
		if expired {
			http.NotFound(w, r)
			return
		}
		if hold == nil || r.Method != http.MethodPost {
			streamable.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		streamable.ServeHTTP(w, r)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			hold.wait(r.Context())
		}
	})
	h.start("127.0.0.1:0")
	t.Cleanup(func() {
		for ss := range h.server.Sessions() {
			_ = ss.Close()
		}
		h.stop()
	})
	return h
}

func (h *httpServer) start(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.ts = httptest.NewUnstartedServer(h.handler)
	h.ts.Listener = l
	h.ts.Start()
	h.addr = l.Addr().String()
}

func (h *httpServer) stop() {
	if h.ts != nil {
		h.ts.CloseClientConnections()
		h.ts.Close()
		h.ts = nil
	}
}

// holding is how a server ends the stream of a tools/call response it
// already answered: after d (never when 0), or when the client lets go of
// the request. ended receives who ended each stream.
type holding struct {
	d     time.Duration
	ended chan string
}

func (h *holding) wait(ctx context.Context) {
	var timeout <-chan time.Time
	if h.d > 0 {
		t := time.NewTimer(h.d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		h.ended <- "client"
	case <-timeout:
		h.ended <- "server"
	}
}

// holdCalls makes the server keep the stream of each tools/call response
// open for d after the response (forever when 0), as a server on a slow
// link or one that never ends its streams does. The channel says who ended
// each stream.
func (h *httpServer) holdCalls(d time.Duration) <-chan string {
	hold := &holding{d: d, ended: make(chan string, 64)}
	h.mu.Lock()
	h.hold = hold
	h.mu.Unlock()
	return hold.ended
}

func (h *httpServer) expire() {
	h.mu.Lock()
	h.expired = h.last
	h.mu.Unlock()
}

func httpConfig(h *httpServer) Config {
	cfg := testConfig("web")
	cfg.Transport, cfg.Command = TransportStreamableHTTP, ""
	cfg.URL = "http://" + h.addr + "/mcp"
	cfg.Headers = map[string]string{"Authorization": "Bearer sekrit"}
	cfg.Reconnect = Reconnect{Enabled: true, InitialDelayMs: 10, MaxDelayMs: 100, MaxAttempts: 100}
	return cfg
}

func TestStreamableHTTPHeadersAndExpiredSession(t *testing.T) {
	h := newHTTPServer(t)
	e := mustStart(t, httpConfig(h), nil, withTransport)
	if res := e.call(tools.Caller{}, "mcp__web__ping", "{}"); resultText(res) != "pong" {
		t.Fatalf("ping = %q, %v", resultText(res), res.Err)
	}
	h.mu.Lock()
	for i, a := range h.auth {
		if a != "Bearer sekrit" {
			t.Errorf("request %d carried Authorization %q", i, a)
		}
	}
	h.mu.Unlock()

	h.expire()
	// The next request meets a 404 on the session: go-sdk ends the
	// session, and the supervisor initializes a new one.
	_ = e.call(tools.Caller{}, "mcp__web__ping", "{}")
	eventually(t, "a new session", func() bool { return e.logs.Has(slog.LevelInfo, "reconnected and re-synced tools") })
	if res := e.call(tools.Caller{}, "mcp__web__ping", "{}"); resultText(res) != "pong" {
		t.Errorf("ping after re-initialize = %q, %v", resultText(res), res.Err)
	}
}

// A successful HTTP call's context outlives the call (see client.release),
// so that go-sdk drains the response stream and the connection stays
// alive; dispose still lets go of a stream the server never ends.
func TestStreamableHTTPCallRelease(t *testing.T) {
	t.Run("the server ends each stream", func(t *testing.T) {
		h := newHTTPServer(t)
		// The release is an hour away, so the server's end of the stream
		// always comes first; with the default second it raced the
		// server's 20ms on a loaded machine.
		e := mustStart(t, httpConfig(h), nil, withTransport, func(_ *testEnv, o *options) { o.releaseDelay = time.Hour })
		// 20ms between the response and the end of its stream: a client
		// that cancels the call's context on return aborts every stream,
		// and with it the connection.
		ended := h.holdCalls(20 * time.Millisecond)
		for i := range 5 {
			if res := e.call(tools.Caller{}, "mcp__web__ping", "{}"); resultText(res) != "pong" {
				t.Fatalf("ping = %q, %v", resultText(res), res.Err)
			}
			if by := <-ended; by != "server" {
				t.Fatalf("call %d: the %s ended the response stream, want the server", i, by)
			}
		}
	})
	t.Run("dispose lets go of a stream the server keeps open", func(t *testing.T) {
		h := newHTTPServer(t)
		e := mustStart(t, httpConfig(h), nil, withTransport, func(_ *testEnv, o *options) { o.releaseDelay = time.Hour })
		ended := h.holdCalls(0)
		if res := e.call(tools.Caller{}, "mcp__web__ping", "{}"); resultText(res) != "pong" {
			t.Fatalf("ping = %q, %v", resultText(res), res.Err)
		}
		if err := e.scope.Dispose(waitTimeout); err != nil {
			t.Fatal(err)
		}
		timer := time.NewTimer(waitTimeout)
		defer timer.Stop()
		select {
		case <-ended:
		case <-timer.C:
			t.Fatal("the call's response stream outlived dispose")
		}
	})
}

func TestStreamableHTTPServerDownAndBack(t *testing.T) {
	h := newHTTPServer(t)
	e := mustStart(t, httpConfig(h), nil, withTransport)
	addr := h.addr
	h.stop()
	res := e.call(tools.Caller{}, "mcp__web__ping", "{}")
	if res.Err == nil {
		t.Fatal("a call to a stopped server succeeded")
	}
	eventually(t, "the supervisor to notice", func() bool { return strings.HasPrefix(e.Detail(), "reconnecting") })
	if got := e.names(); len(got) != 1 {
		t.Errorf("tools during the outage: %v", got)
	}
	h.start(addr)
	eventually(t, "recovery", func() bool { return e.Detail() == "connected, 1 tool" })
	if res := e.call(tools.Caller{}, "mcp__web__ping", "{}"); resultText(res) != "pong" {
		t.Errorf("ping after recovery = %q, %v", resultText(res), res.Err)
	}
}
