package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

func TestRender(t *testing.T) {
	c := &client{cfg: &Config{MaxResultBytes: 1 << 20}}
	render := c.renderer("r")
	text := NewCallResult([]json.RawMessage{json.RawMessage(`{"type":"text","text":"hi"}`)}, nil)
	for _, tt := range []struct {
		name  string
		value any
		want  string
	}{
		{"value", text, "hi"},
		{"pointer", &text, "hi"},
		{"nil pointer", (*CallResult)(nil), "null"},
		{"a value a hook made", map[string]any{"n": 1}, `{"n":1}`},
		{"unmarshalable", func() {}, "[unrenderable value: json: unsupported type: func()]"},
	} {
		if diff := cmp.Diff([]tools.Content{tools.Text(tt.want)}, render(tt.value)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, tt := range []struct {
		mediaType string
		data      string
		want      bool
	}{
		{"image/png", "\x89PNG\r\n\x1a\nrest", true},
		{"image/png", "GIF89a", false},
		{"image/jpeg", "\xff\xd8\xff\xe0", true},
		{"image/jpeg", "\xff\xd8", false},
		{"image/gif", "GIF87a...", true},
		{"image/gif", "GIF89a...", true},
		{"image/gif", "GIF90a", false},
		{"image/webp", "RIFF\x00\x00\x00\x00WEBPVP8 ", true},
		{"image/webp", "RIFF\x00\x00\x00\x00WAVE", false},
		{"image/bmp", "BM", false},
	} {
		if got := sniff(tt.mediaType, []byte(tt.data)); got != tt.want {
			t.Errorf("sniff(%s, %q) = %v, want %v", tt.mediaType, tt.data, got, tt.want)
		}
	}
	for declared, want := range map[string]string{"image/PNG": "image/png", "image/jpeg; q=1": "image/jpeg", " image/webp ": "image/webp"} {
		if got, ok := imageType(declared); !ok || got != want {
			t.Errorf("imageType(%q) = %q, %v", declared, got, ok)
		}
	}
}

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
