package gateway

// End-to-end tests: the real dsh-host binary in gateway mode, with an
// mcp-client instance on the in-repo fixture server and mcp-fold, driven by
// the third-party MCP Inspector CLI and by go-sdk clients.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	_ "github.com/dsh-host/dsh-host/plugins/mcpoutput"
	"github.com/dsh-host/dsh-host/services/outputs"
)

var dshHost struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// dshHostBinary builds cmd/dsh-host once per test process.
func dshHostBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the end-to-end tests build and run the dsh-host binary")
	}
	root := mcptest.ModuleRoot(t)
	dshHost.once.Do(func() {
		dshHost.dir, dshHost.err = os.MkdirTemp("", "dsh-host-e2e-")
		if dshHost.err != nil {
			return
		}
		dshHost.path = filepath.Join(dshHost.dir, "dsh-host")
		cmd := exec.Command("go", "build", "-o", dshHost.path, "./cmd/dsh-host")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			dshHost.err = fmt.Errorf("go build ./cmd/dsh-host: %w\n%s", err, out)
		}
	})
	if dshHost.err != nil {
		t.Fatal(dshHost.err)
	}
	// The gateway's e2e needs the MCP plugins in the binary.
	out, err := exec.Command(dshHost.path, "plugins").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("mcp-client")) || !bytes.Contains(out, []byte("mcp-fold")) {
		msg := fmt.Sprintf("dsh-host does not ship mcp-client and mcp-fold yet (dsh-host plugins: %v)\n%s", err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dshHost.path
}

func removeBinaries() {
	if dshHost.dir != "" {
		os.RemoveAll(dshHost.dir)
	}
}

// e2e is one composition in a temporary directory, with the fixture server
// under mcp-client (serverName fx) and, optionally, mcp-fold.
type e2e struct {
	dir         string
	composition string
	home        string // DSH_HOME
	cancelFile  string // where the fixture's slow tool records its events
	events      string // cancelFile's directory, the one the fixture may write
	fixture     string
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	dir := t.TempDir()
	e := &e2e{
		dir:         dir,
		composition: filepath.Join(dir, "composition.yml"),
		home:        filepath.Join(dir, "home"),
		events:      filepath.Join(dir, "events"),
		fixture:     mcptest.FixtureBinary(t),
	}
	// A directory of its own, granted to the sandboxed fixture.
	e.cancelFile = filepath.Join(e.events, "cancel.log")
	if err := os.Mkdir(e.events, 0o700); err != nil {
		t.Fatal(err)
	}
	e.write(t, `  - id: fold
    name: mcp-fold
    config: {}
`)
	return e
}

// fixtureEntry is a composition's start: the plugins list with the
// fixture server (serverName fx, over stdio, recording cancellations in
// e.cancelFile) started with the extra flags args.
func (e *e2e) fixtureEntry(args ...string) string {
	quoted := []string{fmt.Sprintf("%q", "-cancel-file"), fmt.Sprintf("%q", e.cancelFile)}
	for _, a := range args {
		quoted = append(quoted, fmt.Sprintf("%q", a))
	}
	return fmt.Sprintf(`plugins:
  - id: fixture
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [%s]
      %s
`, e.fixture, strings.Join(quoted, ", "), mcptest.SandboxWrite(e.events))
}

// write writes the composition: the fixture entry, then extra entries.
func (e *e2e) write(t *testing.T, extra string) {
	t.Helper()
	yaml := e.fixtureEntry() + extra
	// Write and rename, as editors do: the watcher must follow it.
	tmp := e.composition + ".tmp"
	if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.composition); err != nil {
		t.Fatal(err)
	}
}

func (e *e2e) env() []string {
	return append(os.Environ(), "DSH_HOME="+e.home)
}

// transport returns a client transport to `dsh-host serve` (bin) on e's
// composition: one that starts it with --stdio, or one to a running
// --http gateway.
func (e *e2e) transport(t *testing.T, bin, kind string) mcp.Transport {
	t.Helper()
	if kind == "stdio" {
		cmd := exec.Command(bin, "serve", "--stdio", "-c", e.composition)
		cmd.Env = e.env()
		return &mcp.CommandTransport{Command: cmd}
	}
	return &mcp.StreamableClientTransport{Endpoint: e.serveHTTPProc(t, bin, nil).url}
}

// fixturesRunning returns the pids of fixture processes started for this
// test (recognized by its cancel file on their command line).
func (e *e2e) fixturesRunning(t *testing.T) []int {
	t.Helper()
	return mcptest.ProcessesWith(t, e.cancelFile)
}

// gatewayProc is a running `dsh-host serve --http`.
type gatewayProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *mcptest.SyncBuffer
	done   chan error
}

// serveHTTPProc starts `dsh-host serve --http 127.0.0.1:0` on the
// composition, with extra environment, and waits until it listens. It is
// stopped with SIGTERM when the test ends, and must exit 0.
func (e *e2e) serveHTTPProc(t *testing.T, bin string, env []string, args ...string) *gatewayProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0", "--log-format", "json", "-c", e.composition}, args...)...)
	cmd.Env = append(e.env(), env...)
	cmd.Stdout = io.Discard
	pr, pw := io.Pipe()
	p := &gatewayProc{cmd: cmd, stderr: &mcptest.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Bytes()
			p.stderr.Write(append(line, '\n'))
			var rec struct{ Msg, URL string }
			if json.Unmarshal(line, &rec) == nil && rec.URL != "" && strings.Contains(rec.Msg, "Streamable HTTP") {
				select {
				case urls <- rec.URL:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		p.done <- err
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("dsh-host serve exited with %v after SIGTERM; stderr:\n%s", err, p.stderr)
			}
		case <-time.After(wait):
			cmd.Process.Kill()
			<-p.done
			t.Errorf("dsh-host serve did not exit within %s of SIGTERM; stderr:\n%s", wait, p.stderr)
		}
		<-copied
		waitFor(t, "the fixture server to exit with the gateway", func() bool { return len(e.fixturesRunning(t)) == 0 })
	})
	select {
	case p.url = <-urls:
	case err := <-p.done:
		p.done <- err
		t.Fatalf("dsh-host serve exited before listening: %v; stderr:\n%s", err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("dsh-host serve did not listen within 30s; stderr:\n%s", p.stderr)
	}
	return p
}

// waitFor polls cond, which reads state another process owns, until it
// holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	mcptest.WaitFor(t, wait, what, cond)
}

// inspector runs the MCP Inspector CLI with args and returns its stdout.
func inspector(t *testing.T, args ...string) (string, error) {
	t.Helper()
	dir := mcptest.NodeModule(t, mcptest.InspectorCLI)
	node := mcptest.Node(t)
	// inspector-cli 1.0.3 reads ../package.json relative to its working
	// directory: give it one.
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "package.json"), []byte(`{"name":"e2e","version":"0.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, "build", "cli.js"), "--cli"}, args...)...)
	cmd.Dir = work
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("inspector-cli %s: %w\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// inspectorTools lists the tools of server (the inspector's arguments naming
// it) through the inspector, sorted by name.
func inspectorTools(t *testing.T, server []string) []string {
	t.Helper()
	out, err := inspector(t, slices.Concat(server, []string{"--method", "tools/list"})...)
	if err != nil {
		t.Fatal(err)
	}
	return listNames(t, out)
}

// inspectorCall calls tool through the gateway's mcp_call, with args (a JSON
// object, or "" for none), and returns the result's text and isError.
func inspectorCall(t *testing.T, server []string, tool, args string) (string, bool) {
	t.Helper()
	call := slices.Concat(server, []string{"--method", "tools/call", "--tool-name", "mcp_call", "--tool-arg", "tool=" + tool})
	if args != "" {
		call = append(call, "arguments="+args)
	}
	out, err := inspector(t, call...)
	if err != nil {
		t.Fatal(err)
	}
	return callText(t, out)
}

// listNames decodes an inspector tools/list answer.
func listNames(t *testing.T, out string) []string {
	t.Helper()
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode tools/list output: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// callText decodes an inspector tools/call answer into its text and isError.
func callText(t *testing.T, out string) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode tools/call output: %v\n%s", err, out)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String(), res.IsError
}

// foldedSurface is the fixture folded, with the built-in tool that reads
// cut results on.
var foldedSurface = []string{"mcp_call", "mcp_list", outputs.ToolName}

func TestE2EInspectorStdio(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	server := []string{"-e", "DSH_HOME=" + e.home, bin, "serve", "--stdio", "-c", e.composition}

	if got := inspectorTools(t, server); !slices.Equal(got, foldedSurface) {
		t.Errorf("tools/list over stdio = %v, want the folded surface %v", got, foldedSurface)
	}
	if text, isErr := inspectorCall(t, server, "mcp__fx__greet", `{"name":"gateway"}`); isErr || !strings.Contains(text, "Hello, gateway!") {
		t.Errorf("mcp_call mcp__fx__greet over stdio = %q (isError %v), want the fixture's greeting", text, isErr)
	}

	// The server's failure travels back as an isError result with the
	// fold's text, not as a protocol failure.
	if text, isErr := inspectorCall(t, server, "mcp__fx__fail", ""); !isErr || !strings.Contains(text, "the fixture failed on purpose") {
		t.Errorf("mcp_call mcp__fx__fail = %q (isError %v), want the fixture's failure message as isError", text, isErr)
	}
	waitFor(t, "every fixture server to exit", func() bool { return len(e.fixturesRunning(t)) == 0 })
}

func TestE2EInspectorHTTP(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	p := e.serveHTTPProc(t, bin, []string{"E2E_GATEWAY_TOKEN=tok-123"}, "--token-env", "E2E_GATEWAY_TOKEN")
	server := []string{p.url, "--transport", "http", "--header", "Authorization: Bearer tok-123"}

	if got := inspectorTools(t, server); !slices.Equal(got, foldedSurface) {
		t.Errorf("tools/list over HTTP = %v, want the folded surface %v", got, foldedSurface)
	}
	if text, isErr := inspectorCall(t, server, "mcp__fx__shout", `{"text":"loud"}`); isErr || !strings.Contains(text, "LOUD") {
		t.Errorf("mcp_call mcp__fx__shout over HTTP = %q (isError %v), want LOUD", text, isErr)
	}
	if text, isErr := inspectorCall(t, server, "mcp__fx__nope", ""); !isErr || !strings.HasPrefix(text, `tool "mcp__fx__nope" is not registered or not visible in this scope`) {
		t.Errorf("mcp_call of an unknown tool over HTTP = %q (isError %v), want the fold's refusal as isError", text, isErr)
	}

	// Without the token the inspector is turned away.
	if out, err := inspector(t, p.url, "--transport", "http", "--method", "tools/list"); err == nil {
		t.Errorf("tools/list without the token succeeded: %s", out)
	}

	// The statuses a raw client gets.
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer tok-124"}, http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": "Bearer tok-123", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"localhost origin", map[string]string{"Authorization": "Bearer tok-123", "Origin": "http://localhost:6274"}, http.StatusOK},
		{"token", map[string]string{"Authorization": "Bearer tok-123"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, _ := post(t, p.url, tt.header); status != tt.want {
				t.Errorf("status = %d, want %d", status, tt.want)
			}
		})
	}
}

func TestE2ERefusesNonLoopbackWithoutToken(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"all interfaces", []string{"--http", ":0"}, nil, "without a token"},
		{"wildcard address", []string{"--http", "0.0.0.0:0"}, nil, "without a token"},
		{"token variable empty", []string{"--http", "0.0.0.0:0", "--token-env", "E2E_EMPTY_TOKEN"}, []string{"E2E_EMPTY_TOKEN="}, "not set or empty"},
		{"both transports", []string{"--stdio", "--http", "127.0.0.1:0"}, nil, "exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"serve", "-c", e.composition}, tt.args...)...)
			cmd.Env = append(e.env(), tt.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit = %v, want status 2; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to say %q", stderr.String(), tt.want)
			}
		})
	}
}

// goClient connects a go-sdk client that reports list_changed on changed.
func goClient(t *testing.T, tr mcp.Transport) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	awaitFixture(t, cs)
	for len(changed) > 0 {
		<-changed
	}
	return cs, changed
}

// awaitFixture waits until the fixture server's tools are served to cs
// (under their names, or in mcp_list's catalog when folded): serve --stdio
// answers before a slow server is connected, which then comes with
// list_changed.
func awaitFixture(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	// The fixture's ping, or any tool of an MCP server (the npm servers
	// some tests run have no ping), listed or behind mcp_list.
	server := func(name string) bool { return strings.HasSuffix(name, "ping") || strings.HasPrefix(name, "mcp__") }
	waitFor(t, "the fixture server's tools", func() bool {
		tl, err := cs.ListTools(ctx, nil)
		if err != nil {
			return false
		}
		if slices.ContainsFunc(tl.Tools, func(tool *mcp.Tool) bool { return server(tool.Name) }) {
			return true
		}
		if !slices.ContainsFunc(tl.Tools, func(tool *mcp.Tool) bool { return tool.Name == "mcp_list" }) {
			return false
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_list", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			return false
		}
		text := fmt.Sprint(mcptest.Texts(res))
		return strings.Contains(text, "ping") || strings.Contains(text, "mcp__")
	})
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

func TestE2EReloadSendsListChanged(t *testing.T) {
	bin := dshHostBinary(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			e := newE2E(t)
			cs, changed := goClient(t, e.transport(t, bin, transport))
			if got := names(t, cs); !slices.Equal(got, foldedSurface) {
				t.Fatalf("tools/list = %v, want %v", got, foldedSurface)
			}

			// Keep one fixture tool native: the assembly changes, and the
			// client hears of it.
			e.write(t, `  - id: fold
    name: mcp-fold
    config:
      keep: [mcp__fx__greet]
`)
			select {
			case <-changed:
			case <-time.After(30 * time.Second):
				t.Fatal("no notifications/tools/list_changed after the composition edit")
			}
			want := []string{"mcp__fx__greet", "mcp_call", "mcp_list", outputs.ToolName}
			waitFor(t, "the kept tool in tools/list", func() bool { return slices.Equal(names(t, cs), want) })
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__fx__greet", Arguments: map[string]any{"name": "reload"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := mcptest.Texts(res); res.IsError || len(got) == 0 || !strings.Contains(got[0], "Hello, reload!") {
				t.Errorf("mcp__fx__greet after the reload = %q (isError %v)", got, res.IsError)
			}
		})
	}
}

func TestE2ECancellationReachesTheServer(t *testing.T) {
	bin := dshHostBinary(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			e := newE2E(t)
			cs, _ := goClient(t, e.transport(t, bin, transport))

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_call", Arguments: map[string]any{
					"tool": "mcp__fx__slow", "arguments": map[string]any{"ms": 60000},
				}})
				done <- err
			}()
			waitFor(t, "the fixture's slow tool to start", func() bool { return fileHasLine(e.cancelFile, "slow started") })
			cancel()
			waitFor(t, "the cancellation to reach the fixture server", func() bool { return fileHasLine(e.cancelFile, "slow cancelled") })
			if err := <-done; err == nil {
				t.Error("the cancelled call returned no error")
			}
		})
	}
}

func fileHasLine(path, line string) bool {
	b, err := os.ReadFile(path)
	return err == nil && slices.Contains(strings.Split(string(b), "\n"), line)
}

func TestE2EImageReachesTheClient(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	cmd := exec.Command(bin, "serve", "--stdio", "-c", e.composition)
	cmd.Env = e.env()
	cs, _ := goClient(t, &mcp.CommandTransport{Command: cmd})

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp_call", Arguments: map[string]any{"tool": "mcp__fx__image"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("mcp_call mcp__fx__image: %q", mcptest.Texts(res))
	}
	var images []*mcp.ImageContent
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			images = append(images, img)
		}
	}
	if len(images) != 1 {
		t.Fatalf("content = %q, want one image among text", mcptest.Texts(res))
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(images[0].Data))
	if err != nil || format != "png" || images[0].MIMEType != "image/png" {
		t.Fatalf("image: %s %q, decode: %v", images[0].MIMEType, format, err)
	}
	if cfg.Width != 4 || cfg.Height != 4 {
		t.Errorf("image is %dx%d, want the fixture's 4x4 PNG", cfg.Width, cfg.Height)
	}
	// The gateway relays the server's image: it is not stored (or
	// downscaled) for a model, as it would be for one.
	if stored, _ := filepath.Glob(filepath.Join(e.home, "attachments", "*", "*", "*")); len(stored) != 0 {
		t.Errorf("%q stored for a client that gets the image itself", stored)
	}
}
