//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// explosive is a tool's value whose relay panics in the gateway: a
// plugin's bug, outside the registry's own recover.
type explosive struct{}

func (explosive) MCPCallToolResult() *mcp.CallToolResult { panic("explosive: a plugin's bug") }
func (explosive) MCPContent() []json.RawMessage          { return nil }
func (explosive) MCPStructuredContent() json.RawMessage  { return nil }

// test-panic registers the tools explode (its value panics in the
// gateway) and crash (panics itself).
func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "test-panic",
		Inject: []host.Dep{host.Require(tools.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			reg := host.Get(s, tools.Key)
			if _, err := reg.Register(s, tools.Definition{Name: "explode", Description: "A value whose relay panics.",
				Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: explosive{}}, nil }}); err != nil {
				return err
			}
			_, err := reg.Register(s, tools.Definition{Name: "crash", Description: "Panics.",
				Execute: func(context.Context, tools.Call) (tools.Output, error) { panic("crash: a tool's bug") }})
			return err
		},
	})
}

// TestServeTracedSurvivesFailedAndPanickingCalls: serve with tracing on
// (OTLP to a receiver in the test), over stdio and over HTTP, answers a
// tools/call of an unknown tool, one without a name, one whose tool panics
// and one whose value panics in the gateway, each with an error, and goes
// on serving: the first two used to end the process.
func TestServeTracedSurvivesFailedAndPanickingCalls(t *testing.T) {
	collector := httptest.NewServer(&otlpReceiver{})
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Setenv("DSH_HOME", t.TempDir())
			file := writeComposition(t, "plugins:\n  - {id: hi, name: greeter}\n  - {id: boom, name: test-panic}\n")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var s *served
			var cs *mcp.ClientSession
			var err error
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
			if transport == "stdio" {
				s = serveInProcess(t, ctx, "--stdio", "-c", file)
				cs, err = client.Connect(ctx, &mcp.IOTransport{Reader: s.stdout, Writer: s.stdin}, nil)
			} else {
				s = serveInProcess(t, ctx, "--http", "127.0.0.1:0", "-c", file)
				var url string
				waitLog(t, s.logs, "the listener", func(m map[string]any) bool {
					url, _ = m["url"].(string)
					return m["msg"] == "gateway listening"
				})
				hc := &http.Client{Transport: &http.Transport{}}
				defer hc.CloseIdleConnections()
				cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"no_such_tool", "", "crash", "explode"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
				if err == nil && !res.IsError {
					t.Errorf("tools/call %q: no error: %v", name, mcptest.Texts(res))
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "still"}})
			if err != nil || res.IsError {
				t.Fatalf("greet after the failed calls: %v %v", err, mcptest.Texts(res))
			}
			cs.Close()
			cancel()
			if code := s.exit(t); code != exitOK {
				t.Errorf("exit %d, want 0\n%s", code, s.stderr)
			}
			if n := strings.Count(s.stderr.String(), "panic while serving one request"); n != 1 {
				t.Errorf("%d log lines of the gateway's panic, want 1:\n%s", n, s.stderr)
			}
		})
	}
}
