package mcptest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = 20 * time.Second

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func TestFixtureStdioTools(t *testing.T) {
	cs := mcptest.ConnectFixture(t, "-name", "fx-test")
	if got := cs.InitializeResult().ServerInfo.Name; got != "fx-test" {
		t.Errorf("serverInfo name = %q, want fx-test", got)
	}
	if diff := cmp.Diff(mcptest.FixtureTools(), toolNames(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	tests := []struct {
		tool    string
		args    any
		want    []string
		isError bool
	}{
		{"add", map[string]any{"a": 2, "b": 3}, []string{"5"}, false},
		{"add", map[string]any{"a": 0.5, "b": -2}, []string{"-1.5"}, false},
		{"greet", map[string]any{}, []string{"Hello, World!"}, false},
		{"greet", map[string]any{"name": "Ada"}, []string{"Hello, Ada!"}, false},
		{"shout", map[string]any{"text": "quiet please"}, []string{"QUIET PLEASE"}, false},
		{"ping", nil, []string{"pong"}, false},
		{"admin.reset", nil, []string{"reset done"}, false},
		{"fail", nil, []string{"the fixture failed on purpose"}, true},
		{"image", nil, []string{"before the image", "<image/png>", "after the image"}, false},
		{"slow", map[string]any{"ms": 1}, []string{"slept 1 ms"}, false},
	}
	for _, tc := range tests {
		res := call(t, cs, tc.tool, tc.args)
		if diff := cmp.Diff(tc.want, mcptest.Texts(res)); diff != "" {
			t.Errorf("%s %v content (-want +got):\n%s", tc.tool, tc.args, diff)
		}
		if res.IsError != tc.isError {
			t.Errorf("%s isError = %v, want %v", tc.tool, res.IsError, tc.isError)
		}
	}
}

func TestFixtureStructuredAdd(t *testing.T) {
	cs := mcptest.ConnectFixture(t)
	var schema any
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "add" {
			schema = tool.OutputSchema
		}
	}
	if schema == nil {
		t.Fatal("add has no outputSchema")
	}
	res := call(t, cs, "add", map[string]any{"a": 2, "b": 3})
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"sum":5}` {
		t.Errorf("structuredContent = %s, want {\"sum\":5}", got)
	}
}

func TestFixtureImageIsARealPNG(t *testing.T) {
	cs := mcptest.ConnectFixture(t)
	res := call(t, cs, "image", nil)
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !ok {
		t.Fatalf("block 1 is %T, want an image", res.Content[1])
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("image data is not a PNG: %v", err)
	}
	if cfg.Width != 4 || cfg.Height != 4 {
		t.Errorf("image is %dx%d, want 4x4", cfg.Width, cfg.Height)
	}

	res = call(t, cs, "bad-image", nil)
	bad, ok := res.Content[1].(*mcp.ImageContent)
	if !ok {
		t.Fatalf("bad-image block 1 is %T, want an image", res.Content[1])
	}
	if _, err := png.DecodeConfig(bytes.NewReader(bad.Data)); err == nil || bad.MIMEType != "image/png" {
		t.Errorf("bad-image: want bytes that are not a PNG declared as image/png, got %s that decodes", bad.MIMEType)
	}
}

func TestFixturePagination(t *testing.T) {
	cs := mcptest.ConnectFixture(t, "-page-size", "2", "-extra-tools", "3")
	want := append(mcptest.FixtureTools(), "filler_001", "filler_002", "filler_003")
	slices.Sort(want)
	if diff := cmp.Diff(want, toolNames(t, cs)); diff != "" {
		t.Errorf("tools over pages of 2 (-want +got):\n%s", diff)
	}
}

func TestFixtureEnv(t *testing.T) {
	cmd := exec.Command(mcptest.FixtureBinary(t))
	cmd.Env = []string{"FIXTURE_PROBE=seen", "PATH=" + os.Getenv("PATH")}
	cs := mcptest.Connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	got := strings.Split(mcptest.Texts(call(t, cs, "env", nil))[0], "\n")
	if !slices.Contains(got, "FIXTURE_PROBE=seen") {
		t.Errorf("env output lacks FIXTURE_PROBE=seen: %q", got)
	}
}

// waitFile waits until path contains line.
func waitFile(t *testing.T, path, line string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		b, _ := os.ReadFile(path)
		if slices.Contains(strings.Split(string(b), "\n"), line) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never got %q; it holds %q", path, line, b)
		}
		time.Sleep(10 * time.Millisecond) // polling a file: there is nothing to block on
	}
}

func TestFixtureSlowHonoursCancellation(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	cs := mcptest.ConnectFixture(t, "-cancel-file", events)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 60000}})
		errc <- err
	}()
	waitFile(t, events, "slow started")
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled call returned no error")
	}
	waitFile(t, events, "slow cancelled")
}

func TestFixtureListChanged(t *testing.T) {
	changed := make(chan struct{}, 8)
	cmd := exec.Command(mcptest.FixtureBinary(t))
	cs := mcptest.Connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if got := mcptest.Texts(call(t, cs, "add-tool", map[string]any{"name": "late"})); !slices.Equal(got, []string{"added tool late"}) {
		t.Fatalf("add-tool = %q", got)
	}
	select {
	case <-changed:
	case <-time.After(waitFor):
		t.Fatal("no notifications/tools/list_changed after add-tool")
	}
	if !slices.Contains(toolNames(t, cs), "late") {
		t.Error("tool late not listed after add-tool")
	}
	if got := mcptest.Texts(call(t, cs, "late", nil)); !slices.Equal(got, []string{"hello from late"}) {
		t.Errorf("late = %q", got)
	}
}

func TestFixtureCrash(t *testing.T) {
	cs := mcptest.ConnectFixture(t)
	if got := mcptest.Texts(call(t, cs, "crash", nil)); !slices.Equal(got, []string{"crashing in 25ms"}) {
		t.Fatalf("crash = %q", got)
	}
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("session still open after crash")
	}
}

func TestFixtureCrashOnStart(t *testing.T) {
	cmd := exec.Command(mcptest.FixtureBinary(t), "-crash-on-start")
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcptest"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err == nil {
		_ = cs.Close()
		t.Fatal("connect to a server that crashes on start succeeded")
	}
}

func TestFixtureStdoutCarriesOnlyProtocol(t *testing.T) {
	// With stdin closed at once the server logs to stderr and exits; stdout
	// must stay empty.
	cmd := exec.Command(mcptest.FixtureBinary(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("fixture with empty stdin: %v\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
	if !strings.Contains(stderr.String(), "serving mcpfixture on stdio") {
		t.Errorf("stderr = %q, want the startup line", stderr.String())
	}
}

// headerTransport adds a header to every request.
type headerTransport struct {
	name, value string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

func TestFixtureHTTP(t *testing.T) {
	endpoint := mcptest.StartHTTPFixture(t, "-require-header", "Authorization: Bearer x")
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" || u.Path != "/mcp" {
		t.Fatalf("endpoint %s: want http://127.0.0.1:PORT/mcp", endpoint)
	}

	client := &http.Client{Transport: headerTransport{"Authorization", "Bearer x"}}
	t.Cleanup(client.CloseIdleConnections)
	cs := mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}, nil)
	if got := mcptest.Texts(call(t, cs, "shout", map[string]any{"text": "hi"})); !slices.Equal(got, []string{"HI"}) {
		t.Errorf("shout = %q", got)
	}

	for _, value := range []string{"", "Bearer wrong"} {
		c := &http.Client{Transport: headerTransport{"Authorization", value}}
		ctx, cancel := context.WithTimeout(t.Context(), waitFor)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcptest"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: c, MaxRetries: -1}, nil)
		cancel()
		c.CloseIdleConnections()
		if err == nil {
			_ = cs.Close()
			t.Errorf("Authorization %q: connect succeeded, want 401", value)
		} else if !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
			t.Errorf("Authorization %q: error %v does not say 401", value, err)
		}
	}
}

func TestLoopbackPreload(t *testing.T) {
	node := mcptest.Node(t)
	script := `const net = await import('node:net');
const calls = [[0], [0, '0.0.0.0'], [{port: 0}], [{port: 0, host: '::'}], [0, '127.0.0.1']];
for (const args of calls) {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(...args, resolve));
  console.log(s.address().address);
  s.close();
}`
	out, err := exec.Command(node, "--import", mcptest.LoopbackPreload(t), "--input-type=module", "-e", script).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	want := []string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"}
	if diff := cmp.Diff(want, strings.Fields(string(out))); diff != "" {
		t.Errorf("listen addresses (-want +got):\n%s", diff)
	}
}

func TestEverythingHTTP(t *testing.T) {
	endpoint := mcptest.StartEverythingHTTP(t)
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("endpoint %q: want a 127.0.0.1 URL (%v)", endpoint, err)
	}
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	cs := mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}, nil)
	if got := mcptest.Texts(call(t, cs, "echo", map[string]any{"message": "hello"})); !slices.Equal(got, []string{"Echo: hello"}) {
		t.Errorf("echo = %q", got)
	}
}

func TestNodeServerStdio(t *testing.T) {
	command, argv := mcptest.NodeServer(t, mcptest.ServerEverything, "stdio")
	cs := mcptest.Connect(t, &mcp.CommandTransport{Command: exec.Command(command, argv...), TerminateDuration: time.Second}, nil)
	if got := mcptest.Texts(call(t, cs, "echo", map[string]any{"message": "hello"})); !slices.Equal(got, []string{"Echo: hello"}) {
		t.Errorf("echo = %q", got)
	}
}

// TestProcessFinders: each finder sees the fixture server while a client
// is connected to it, and not before or after.
func TestProcessFinders(t *testing.T) {
	tests := []struct {
		name string
		args func(t *testing.T) []string             // the fixture's flags
		find func(t *testing.T, args []string) []int // the finder under test
	}{
		{
			name: "ChildProcesses",
			args: func(*testing.T) []string { return nil },
			find: func(t *testing.T, _ []string) []int { return mcptest.ChildProcesses(t, mcptest.FixtureBinary(t)) },
		},
		{
			name: "ProcessesWith",
			args: func(t *testing.T) []string { return []string{"-name", filepath.Join(t.TempDir(), "marker")} },
			find: func(t *testing.T, args []string) []int { return mcptest.ProcessesWith(t, args[1]) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args(t)
			if got := tt.find(t, args); len(got) != 0 {
				t.Fatalf("processes before start: %v", got)
			}
			cs := mcptest.ConnectFixture(t, args...)
			if got := tt.find(t, args); len(got) != 1 {
				t.Errorf("processes while connected: %v, want one", got)
			}
			if err := cs.Close(); err != nil {
				t.Logf("close: %v", err)
			}
			if got := tt.find(t, args); len(got) != 0 {
				t.Errorf("processes after close: %v, want none", got)
			}
		})
	}
}

func TestFixtureStartsFileAndCrashIfExists(t *testing.T) {
	dir := t.TempDir()
	starts, trigger := filepath.Join(dir, "starts"), filepath.Join(dir, "crash")
	args := []string{"-starts-file", starts, "-crash-if-exists", trigger}
	mcptest.ConnectFixture(t, args...)
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	cmd := exec.Command(mcptest.FixtureBinary(t), args...)
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcptest"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil); err == nil {
		_ = cs.Close()
		t.Fatal("connect succeeded although the crash trigger exists")
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSpace(string(b)), "\n")); n != 2 {
		t.Errorf("starts file has %d lines, want 2:\n%s", n, b)
	}
}

func TestHTTPFixtureRestartOnSameAddress(t *testing.T) {
	first := mcptest.StartHTTPFixtureServer(t, "-name", "first")
	first.Stop()
	select {
	case <-first.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	second := mcptest.StartHTTPFixtureServer(t, "-http", first.Addr, "-name", "second")
	if second.URL != first.URL {
		t.Fatalf("restart listens on %s, want %s", second.URL, first.URL)
	}
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	cs := mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: second.URL, HTTPClient: client}, nil)
	if got := cs.InitializeResult().ServerInfo.Name; got != "second" {
		t.Errorf("serverInfo name = %q, want second", got)
	}
}

func TestFixtureCrashOverHTTP(t *testing.T) {
	srv := mcptest.StartHTTPFixtureServer(t)
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	cs := mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: client, MaxRetries: -1}, nil)
	if got := mcptest.Texts(call(t, cs, "crash", nil)); !slices.Equal(got, []string{"crashing in 25ms"}) {
		t.Fatalf("crash = %q", got)
	}
	select {
	case <-srv.Exited():
	case <-time.After(waitFor):
		t.Fatal("HTTP fixture still running after crash")
	}
}
