package mcpclient

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestConcurrentHTTPCallsReuseConnections: rounds of concurrent calls to a
// Streamable HTTP server keep the connections of the first round for the
// next, instead of closing all but two of them (net/http's default idle
// pool per host) and dialling anew.
//
// What is asserted is that the client closed none: how many the next
// round dials also depends on whether net/http has put each connection
// back in its pool by the time that round begins, which is a race of
// goroutines (it is logged).
func TestConcurrentHTTPCallsReuseConnections(t *testing.T) {
	const concurrent, rounds = 12, 3
	srv := newFakeServer(t, nil)
	type gate struct {
		arrived atomic.Int64
		release chan struct{}
	}
	var round atomic.Pointer[gate]
	srv.addTool("wait", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Hold every call until the whole round is in flight, so the
		// round needs that many connections at once.
		g := round.Load()
		if g.arrived.Add(1) == concurrent {
			close(g.release)
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(waitTimeout):
		}
		return textResult("ok"), nil
	})
	var dialled atomic.Int64
	// The state of each connection that carried a call. (Those of the
	// start are left out: the client may close one whose response it did
	// not read to the end before the attempt's context ended.)
	var mu sync.Mutex
	states, calls := map[net.Conn]http.ConnState{}, map[net.Conn]bool{}
	type connKey struct{}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.srv }, nil)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			mu.Lock()
			calls[r.Context().Value(connKey{}).(net.Conn)] = true
			mu.Unlock()
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	hs.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
	hs.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
		mu.Lock()
		states[c] = s
		mu.Unlock()
	}
	hs.Start()
	t.Cleanup(hs.Close)
	cfg := testConfig("conns")
	cfg.Transport, cfg.Command, cfg.URL = TransportStreamableHTTP, "", hs.URL
	e := mustStart(t, cfg, nil, withTransport)

	var afterFirst int64
	for i := range rounds {
		round.Store(&gate{release: make(chan struct{})})
		var wg sync.WaitGroup
		for range concurrent {
			wg.Go(func() {
				if res := e.call(tools.Caller{}, "mcp__conns__wait", "{}"); res.Err != nil {
					t.Errorf("call: %v", res.Err)
				}
			})
		}
		wg.Wait()
		if i == 0 {
			afterFirst = dialled.Load()
		}
	}
	// Once every response is done, each connection that carried a call is
	// idle, or closed by the client (with a pool of 2, all but 2 of each
	// round's).
	var closed int
	eventually(t, "every connection idle or closed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		closed = 0
		for c, s := range states {
			if !calls[c] {
				continue
			}
			switch s {
			case http.StateClosed:
				closed++
			case http.StateIdle:
			default:
				return false
			}
		}
		return true
	})
	if closed != 0 {
		t.Errorf("the client closed %d of its %d connections between rounds; want them kept for the next calls", closed, dialled.Load())
	}
	t.Logf("first round: %d connections; later rounds dialled %d more", afterFirst, dialled.Load()-afterFirst)
}
