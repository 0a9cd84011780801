package mcpclient

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hangingTransport's Connect ignores its context until released.
type hangingTransport struct{ release chan struct{} }

func (h hangingTransport) Connect(context.Context) (mcp.Connection, error) {
	<-h.release
	return nil, errors.New("released")
}

func TestAbandonedConnectStopsTheSupervisor(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cfg := testConfig("hung")
	cfg.StartupTimeoutMs = 20
	e := mustStart(t, cfg, nil, func(_ *testEnv, o *options) {
		o.transport = func() mcp.Transport { return hangingTransport{release} }
		o.closeTimeout = 20 * time.Millisecond
	})
	// Past startupTimeoutMs the first attempt goes on in the background
	// (lazy.go), so the supervisor stops after start returned.
	eventually(t, "the abandoned attempt", func() bool {
		return e.logs.Has(slog.LevelError, "mcp-client(hung): a connection attempt did not finish within 20ms after it was abandoned") &&
			strings.HasPrefix(e.Detail(), "stopped: ")
	})
	if !strings.HasPrefix(e.Detail(), "stopped: ") {
		t.Errorf("detail = %q", e.Detail())
	}
	if err := e.scope.Dispose(waitTimeout); err != nil {
		t.Errorf("dispose: %v", err)
	}
}

func TestRepeatedCursorIsAnInvalidList(t *testing.T) {
	srv := echoServer(t, "a")
	srv.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: "again"}
				if req.GetParams().(*mcp.ListToolsParams).Cursor == "" {
					res.Tools = []*mcp.Tool{{Name: "a", InputSchema: map[string]any{"type": "object"}}}
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	})
	cfg := testConfig("cur")
	cfg.FailOnStartupError = true
	_, err := startEnv(t, cfg, srv)
	if err == nil || !strings.Contains(err.Error(), `server repeated the tools/list cursor "again" — invalid tool list`) {
		t.Errorf("start = %v", err)
	}
}
