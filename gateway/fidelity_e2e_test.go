package gateway

// End-to-end tests of the gateway's fidelity (issue 12 part A): failures
// arrive as isError, tool listings and results keep every field, progress
// and log messages reach the client, --raw serves a server's own names,
// --stateless serves a plain call.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// fidelityComposition is the fixture with -annotated and -progress, folded
// but for the tools the fidelity tests list and call directly.
func fidelityComposition(e *e2e) string {
	return e.fixtureEntry("-annotated", "-progress") + `  - id: fold
    name: mcp-fold
    config:
      keep: [mcp__fx__annotated, mcp__fx__log, mcp__fx__progress, mcp__fx__add, mcp__fx__fail]
`
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// listener collects what a gateway client is sent besides answers.
type listener struct {
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	logs     []*mcp.LoggingMessageParams
}

func (l *listener) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "fidelity", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			l.mu.Lock()
			l.progress = append(l.progress, req.Params)
			l.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			l.mu.Lock()
			l.logs = append(l.logs, req.Params)
			l.mu.Unlock()
		},
	})
}

func (l *listener) counts() (progress, logs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.progress), len(l.logs)
}

func fidelityConnect(t *testing.T, c *mcp.Client, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	awaitFixture(t, cs)
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func TestE2EFidelity(t *testing.T) {
	bin := dshHostBinary(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			e := newE2E(t)
			writeFile(t, e.composition, fidelityComposition(e))
			var l listener
			cs := fidelityConnect(t, l.client(), e.transport(t, bin, transport))

			t.Run("failures are isError with the fold's text", func(t *testing.T) {
				tests := []struct {
					name string
					args map[string]any
					want string // the text's beginning
				}{
					{"the server's isError", map[string]any{"tool": "mcp__fx__fail"}, `MCP tool "mcp__fx__fail" failed: `},
					{"an unknown tool", map[string]any{"tool": "mcp__fx__nope"}, `tool "mcp__fx__nope" is not registered or not visible in this scope`},
					{"a schema mismatch", map[string]any{"tool": "mcp__fx__greet", "arguments": map[string]any{"name": 5}}, `arguments of "mcp__fx__greet" do not match its input schema at arguments.name: `},
					{"no tool", map[string]any{}, `mcp_call requires a string "tool"`},
				}
				for _, tt := range tests {
					res := callTool(t, cs, "mcp_call", tt.args)
					text := strings.Join(mcptest.Texts(res), "")
					if !res.IsError || !strings.HasPrefix(text, tt.want) {
						t.Errorf("%s: isError %v, text %q; want isError and a text beginning %q", tt.name, res.IsError, text, tt.want)
					}
				}
				res := callTool(t, cs, "mcp__fx__fail", nil)
				if text := strings.Join(mcptest.Texts(res), ""); !res.IsError || !strings.Contains(text, "the fixture failed on purpose") {
					t.Errorf("mcp__fx__fail: isError %v, text %q", res.IsError, text)
				}
				if res := callTool(t, cs, "mcp_call", map[string]any{"tool": "mcp__fx__greet", "arguments": map[string]any{"name": "x"}}); res.IsError {
					t.Errorf("a successful mcp_call is isError: %q", mcptest.Texts(res))
				}
			})

			t.Run("listing metadata passes through", func(t *testing.T) {
				var got *mcp.Tool
				for tool, err := range cs.Tools(context.Background(), nil) {
					if err != nil {
						t.Fatal(err)
					}
					if tool.Name == "mcp__fx__annotated" {
						got = tool
					}
				}
				if got == nil {
					t.Fatal("mcp__fx__annotated is not listed")
				}
				if got.Title != "Annotated echo" || got.Annotations == nil || !got.Annotations.ReadOnlyHint || got.Annotations.Title != "Echo (annotations)" {
					t.Errorf("title %q, annotations %+v", got.Title, got.Annotations)
				}
				if len(got.Icons) != 1 || got.Icons[0].Source != "https://example.com/echo.png" || got.Meta["fixture/kind"] != "annotated" {
					t.Errorf("icons %+v, _meta %v", got.Icons, got.Meta)
				}
				schema, _ := json.Marshal(got.OutputSchema)
				if !strings.Contains(string(schema), `"echo"`) {
					t.Errorf("outputSchema = %s, want the fixture's", schema)
				}
			})

			t.Run("structuredContent passes through", func(t *testing.T) {
				want := map[string]any{"sum": float64(3)}
				for _, call := range []struct {
					name string
					args map[string]any
				}{
					{"mcp__fx__add", map[string]any{"a": 1, "b": 2}},
					{"mcp_call", map[string]any{"tool": "mcp__fx__add", "arguments": map[string]any{"a": 1, "b": 2}}},
				} {
					res := callTool(t, cs, call.name, call.args)
					if diff := cmp.Diff(want, res.StructuredContent); res.IsError || diff != "" {
						t.Errorf("%s: isError %v, structuredContent (-want +got):\n%s", call.name, res.IsError, diff)
					}
				}
			})

			t.Run("progress reaches the client's token", func(t *testing.T) {
				// Every notification, the last (sent right before the
				// answer) included, in each of 20 calls: go-sdk's client
				// (mcp-client's) hands the answer over before it handles
				// the notifications read ahead of it, which mcp-client
				// relays before the call ends. The client here may handle
				// the last ones after its call returned: it waits for them.
				const calls, steps = 20, 4
				for call := range calls {
					params := &mcp.CallToolParams{Name: "mcp__fx__progress", Arguments: map[string]any{"steps": steps, "ms": 0}}
					params.SetProgressToken("client-token")
					res, err := cs.CallTool(context.Background(), params)
					if err != nil || res.IsError {
						t.Fatalf("progress: %v %q", err, mcptest.Texts(res))
					}
					waitFor(t, fmt.Sprintf("all %d progress notifications of call %d", steps, call+1), func() bool { n, _ := l.counts(); return n >= (call+1)*steps })
				}
				l.mu.Lock()
				defer l.mu.Unlock()
				if len(l.progress) != calls*steps {
					t.Errorf("%d notifications, want %d", len(l.progress), calls*steps)
				}
				for i, p := range l.progress {
					step := i%steps + 1
					if p.ProgressToken != "client-token" || p.Progress != float64(step) || p.Total != steps || p.Message != fmt.Sprintf("step %d of %d", step, steps) {
						t.Errorf("notification %d = %+v", i, p)
					}
				}
			})

			t.Run("log messages reach the client at its level", func(t *testing.T) {
				//lint:ignore SA1019 the gateway's clients may use logging/setLevel.
				if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
					t.Fatal(err)
				}
				// A 2026-07-28 session takes the level in each request instead.
				params := &mcp.CallToolParams{Name: "mcp__fx__log", Arguments: map[string]any{"text": "hello"}, Meta: mcp.Meta{mcp.MetaKeyLogLevel: "warning"}}
				if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
					t.Fatalf("log: %v %q", err, mcptest.Texts(res))
				}
				waitFor(t, "the warning", func() bool { _, n := l.counts(); return n >= 1 })
				l.mu.Lock()
				defer l.mu.Unlock()
				// info is below the client's level, debug below the host's.
				if len(l.logs) != 1 || l.logs[0].Level != "warning" || l.logs[0].Logger != "fixture" || l.logs[0].Data != "hello" {
					t.Errorf("log messages: %+v", l.logs)
				}
			})
		})
	}
}

func TestE2ECallExitsOneOnFailedMCPCall(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	for _, tt := range []struct {
		args     string
		wantCode int
	}{
		{`{"tool":"mcp__fx__nope"}`, 1},
		{`{"tool":"mcp__fx__fail"}`, 1},
		{`{"tool":"mcp__fx__greet","arguments":{"name":"x"}}`, 0},
	} {
		cmd := exec.Command(bin, "call", "--no-attach", "-c", e.composition, "mcp_call", tt.args)
		cmd.Env = e.env()
		out, err := cmd.CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.wantCode {
			t.Errorf("dsh-host call mcp_call %s exited %d, want %d:\n%s", tt.args, code, tt.wantCode, out)
		}
	}
}

func TestE2ERaw(t *testing.T) {
	bin := dshHostBinary(t)
	t.Run("one server: its own names", func(t *testing.T) {
		e := newE2E(t)
		e.write(t, "") // the fixture alone
		cmd := exec.Command(bin, "serve", "--stdio", "--raw", "-c", e.composition)
		cmd.Env = e.env()
		cs, _ := goClient(t, &mcp.CommandTransport{Command: cmd})
		got := names(t, cs)
		want := mcptest.FixtureTools()
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tools/list with --raw (-want +got):\n%s", diff)
		}
		if res := callTool(t, cs, "ping", nil); res.IsError || !slices.Equal(mcptest.Texts(res), []string{"pong"}) {
			t.Errorf("ping = %q (isError %v)", mcptest.Texts(res), res.IsError)
		}
	})
	t.Run("two servers: a usage error naming them", func(t *testing.T) {
		e := newE2E(t)
		e.write(t, fmt.Sprintf(`  - id: second
    name: mcp-client
    config: {serverName: two, transport: stdio, command: %q}
`, e.fixture))
		cmd := exec.Command(bin, "serve", "--stdio", "--raw", "-c", e.composition)
		cmd.Env = e.env()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("serve --raw over two servers: %v, want exit 2:\n%s", err, out)
		}
		if !strings.Contains(string(out), `"fixture"`) || !strings.Contains(string(out), `"second"`) {
			t.Errorf("the usage error does not name both servers:\n%s", out)
		}
	})
}

func TestE2EStateless(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	p := e.serveHTTPProc(t, bin, nil, "--stateless")
	cs, _ := goClient(t, &mcp.StreamableClientTransport{Endpoint: p.url})
	res := callTool(t, cs, "mcp_call", map[string]any{"tool": "mcp__fx__ping"})
	if res.IsError || !slices.Equal(mcptest.Texts(res), []string{"pong"}) {
		t.Errorf("mcp_call ping over a stateless gateway = %q (isError %v)", mcptest.Texts(res), res.IsError)
	}
	if got := names(t, cs); !slices.Equal(got, foldedSurface) {
		t.Errorf("tools/list = %v, want %v", got, foldedSurface)
	}
}
