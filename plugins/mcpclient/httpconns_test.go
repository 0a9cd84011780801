package mcpclient

import (
	"context"
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
// Streamable HTTP server reuse the connections of the first round instead
// of dialling new ones for all but two of them (net/http's default idle
// pool per host).
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
	hs := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.srv }, nil))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
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
	if extra := dialled.Load() - afterFirst; extra > 2 {
		t.Errorf("rounds after the first dialled %d new connections (first round: %d); want the idle ones reused", extra, afterFirst)
	}
}
