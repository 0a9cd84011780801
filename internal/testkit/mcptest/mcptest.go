// Package mcptest gives tests real MCP servers to talk to: the in-repo
// fixture server (testdata/mcpfixture) built once per test process, and the
// pinned npm servers that .ci/run installs (found through
// DSH_TEST_NODE_MODULES).
//
// Everything a helper starts listens on 127.0.0.1 only and is stopped when
// the test that started it ends.
package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NodeModulesEnv names the variable that points at the node_modules
// directory holding the pinned npm MCP servers.
const NodeModulesEnv = "DSH_TEST_NODE_MODULES"

// Packages of the pinned npm servers, for NodeModule.
const (
	ServerEverything = "@modelcontextprotocol/server-everything"
	ServerFilesystem = "@modelcontextprotocol/server-filesystem"
	InspectorCLI     = "@modelcontextprotocol/inspector-cli"
)

// installHint is what a developer runs to get the npm servers.
const installHint = `npm install --no-audit --no-fund --prefix "$REPO/.cache/npm" ` +
	`@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 ` +
	`@modelcontextprotocol/inspector-cli@1.0.3 && export ` + NodeModulesEnv + `="$REPO/.cache/npm/node_modules"` +
	` (or run .ci/run)`

// startTimeout bounds how long a helper waits for a server it started to
// say where it listens.
const startTimeout = 30 * time.Second

// ModuleRoot returns the directory of the repository's go.mod, found by
// walking up from the working directory (a package's directory under go
// test).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("mcptest: locate the module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("mcptest: no go.mod above the working directory; run the tests from inside the module")
		}
		dir = parent
	}
}

var fixture struct {
	once sync.Once
	path string
	err  error
}

// FixtureTools returns the names of the tools the fixture server lists at
// start, sorted.
func FixtureTools() []string {
	return []string{"add", "add-tool", "admin.reset", "bad-image", "crash", "env", "fail", "greet", "image", "ping", "shout", "slow"}
}

// ConsoleComposition is a composition of the greeter (id hi), the fixture
// server (id demo, over stdio) and folding (id fold): what the console's
// tests, in its package and the binary's, run. The test links in the
// plugins it names.
func ConsoleComposition(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf(`plugins:
  - id: hi
    name: greeter
    config:
      greeting: Hej
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
  - id: fold
    name: mcp-fold
`, FixtureBinary(t))
}

// FixtureBinary returns the path of the testdata/mcpfixture server, built at
// most once per test process. Builds are cached under the user cache
// directory, keyed by the fixture's sources, go.mod, go.sum and the Go
// version, so a warm run costs no build at all.
func FixtureBinary(t testing.TB) string {
	t.Helper()
	fixture.once.Do(func() { fixture.path, fixture.err = buildFixture() })
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	return fixture.path
}

func buildFixture() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "testdata", "mcpfixture")
	key, err := sourceKey(root, src)
	if err != nil {
		return "", fmt.Errorf("mcptest: hash the fixture sources: %w", err)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "dsh-host", "mcpfixture", key)
	exe := filepath.Join(dir, "mcpfixture")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("mcptest: fixture cache: %w", err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// Build next to the final name and rename, so that test processes
	// building at the same time never see a half-written binary.
	tmp := fmt.Sprintf("%s.%d.tmp", exe, os.Getpid())
	cmd := exec.Command(goTool, "build", "-o", tmp, "./testdata/mcpfixture")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("mcptest: go build ./testdata/mcpfixture: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, exe); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("mcptest: fixture cache: %w", err)
	}
	pruneBuilds(filepath.Dir(dir), key)
	return exe, nil
}

// pruneBuilds removes cached fixture builds other than keep that are more
// than a week old, so edits to the fixture do not pile up binaries.
func pruneBuilds(cache, keep string) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() == keep || !e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 7*24*time.Hour {
			_ = os.RemoveAll(filepath.Join(cache, e.Name()))
		}
	}
}

// sourceKey hashes everything the fixture binary is built from: its own
// sources, and this package's, which it imports (WAV).
func sourceKey(root, src string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, os.Getenv("GOFLAGS"))
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	for _, dir := range []string{src, filepath.Join(root, "internal", "testkit", "mcptest")} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sort.Strings(files[2:])
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// skipOrFail skips the test with msg, or fails it when CI=true: under CI the
// npm servers must be there.
func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: these tests must run)")
	}
	t.Skip(msg)
}

// Node returns the path of the node executable, skipping the test when there
// is none (failing it under CI=true).
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "node is not on PATH: the npm MCP server tests need Node.js 20 or newer")
	}
	return node
}

// NodeModule returns the directory of the installed npm package pkg (for
// example ServerEverything) under $DSH_TEST_NODE_MODULES. It skips the test
// when the variable is unset or node is missing, and fails it when CI=true;
// it fails it when the variable is set but the package is not installed.
func NodeModule(t testing.TB, pkg string) string {
	t.Helper()
	Node(t)
	modules := os.Getenv(NodeModulesEnv)
	if modules == "" {
		skipOrFail(t, NodeModulesEnv+" is unset; to run the npm MCP server tests: "+installHint)
	}
	dir := filepath.Join(modules, filepath.FromSlash(pkg))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		t.Fatalf("mcptest: %s is not installed under %s=%s: %v; install it with: %s", pkg, NodeModulesEnv, modules, err, installHint)
	}
	return dir
}

// NodeServer returns the command line that runs the npm MCP server pkg with
// node directly on its dist/index.js (about twice as fast to start as npx),
// followed by args: for example NodeServer(t, ServerEverything, "stdio").
func NodeServer(t testing.TB, pkg string, args ...string) (command string, argv []string) {
	t.Helper()
	dir := NodeModule(t, pkg)
	entry := filepath.Join(dir, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("mcptest: %s has no dist/index.js: %v", pkg, err)
	}
	return Node(t), append([]string{entry}, args...)
}

// Connect connects a go-sdk client with opts (nil for the defaults) over
// tr, failing the test when that takes longer than the helpers' start
// timeout, and closes the session when the test ends. A client that
// listens for list changes (2026-07-28) is returned once the server has
// taken its subscription up, so that it hears every change made after.
func Connect(t testing.TB, tr mcp.Transport, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcptest", Version: "0"}, opts)
	mw, acked := listenAcked()
	client.AddReceivingMiddleware(mw)
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("mcptest: connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if !waitListening(cs, opts, acked, startTimeout) {
		t.Fatalf("mcptest: the server did not acknowledge subscriptions/listen within %s", startTimeout)
	}
	return cs
}

// ConnectFixture starts the fixture server over stdio with the flags args
// and connects a go-sdk client to it (see Connect). Closing the session
// ends the server: it exits on stdin EOF, and gets SIGTERM a second later
// if it has not.
func ConnectFixture(t testing.TB, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(FixtureBinary(t), args...)
	return Connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
}

// StartHTTPFixture starts the fixture server over Streamable HTTP on
// 127.0.0.1 (a free port) with the extra flags args (for example
// "-require-header", "Authorization: Bearer x") and returns its endpoint URL,
// http://127.0.0.1:PORT/mcp. The server is killed when the test ends.
func StartHTTPFixture(t testing.TB, args ...string) (url string) {
	t.Helper()
	return StartHTTPFixtureServer(t, args...).URL
}

// StartHTTPFixtureServer is StartHTTPFixture for tests that stop the server
// themselves, for example to restart it on the same address: pass
// "-http", srv.Addr to the next one (the last -http flag wins).
func StartHTTPFixtureServer(t testing.TB, args ...string) *Server {
	t.Helper()
	srv := startProcess(t, FixtureBinary(t), append([]string{"-http", "127.0.0.1:0"}, args...), nil, stdoutLine("listening on "))
	srv.URL = srv.line
	srv.Addr = strings.TrimSuffix(strings.TrimPrefix(srv.line, "http://"), "/mcp")
	return srv
}

// StartEverythingHTTP starts @modelcontextprotocol/server-everything in its
// streamableHttp mode, confined to 127.0.0.1 (see LoopbackPreload), on a free
// port, and returns its endpoint URL, http://127.0.0.1:PORT/mcp. It skips
// like NodeModule when the npm servers are not installed. The server is
// killed when the test ends.
func StartEverythingHTTP(t testing.TB) (url string) {
	t.Helper()
	node, argv := NodeServer(t, ServerEverything, "streamableHttp")
	argv = append([]string{"--import", LoopbackPreload(t)}, argv...)
	srv := startProcess(t, node, argv, []string{"PORT=0"}, stderrLine(loopbackMarker))
	return "http://" + srv.line + "/mcp"
}

// StartEverythingSSE is StartEverythingHTTP for server-everything's legacy
// HTTP+SSE mode: it returns the SSE endpoint, http://127.0.0.1:PORT/sse.
func StartEverythingSSE(t testing.TB) (url string) {
	t.Helper()
	node, argv := NodeServer(t, ServerEverything, "sse")
	argv = append([]string{"--import", LoopbackPreload(t)}, argv...)
	srv := startProcess(t, node, argv, []string{"PORT=0"}, stderrLine(loopbackMarker))
	return "http://" + srv.line + "/sse"
}

// loopbackMarker starts the stderr line the preload prints once a server
// listens; the address follows it.
const loopbackMarker = "dsh-loopback-listening "

// loopbackModule makes every net.Server listen on 127.0.0.1 unless given a
// loopback host, and reports each TCP address it listens on to stderr.
const loopbackModule = `// Written by internal/testkit/mcptest: confine a node server to loopback.
import net from 'node:net';

const listen = net.Server.prototype.listen;
const loopback = new Set(['127.0.0.1', 'localhost', '::1']);
const isPort = (v) => typeof v === 'number' || (typeof v === 'string' && v !== '' && !Number.isNaN(Number(v)));

net.Server.prototype.listen = function (...args) {
  if (args.length === 0 || typeof args[0] === 'function') {
    args.unshift(0);
  }
  if (isPort(args[0])) {
    if (typeof args[1] === 'string') {
      if (!loopback.has(args[1])) args[1] = '127.0.0.1';
    } else {
      args.splice(1, 0, '127.0.0.1');
    }
  } else if (args[0] !== null && typeof args[0] === 'object' && !(args[0] instanceof net.Server) && args[0].path === undefined && args[0].fd === undefined && args[0]._handle === undefined) {
    if (!loopback.has(args[0].host)) args[0] = { ...args[0], host: '127.0.0.1' };
  }
  this.once('listening', () => {
    const a = this.address();
    if (a && typeof a === 'object') {
      const host = a.family === 'IPv6' ? '[' + a.address + ']' : a.address;
      process.stderr.write('` + loopbackMarker + `' + host + ':' + a.port + '\n');
    }
  });
  return listen.apply(this, args);
};
`

// LoopbackPreload writes a small ES module into a temporary directory and
// returns its path, for `node --import PATH ...`: it makes net.Server#listen
// bind 127.0.0.1 whatever host (or none) the server asks for, and prints
// "dsh-loopback-listening HOST:PORT" to stderr for every TCP listener. Node
// servers that have no host option (server-everything's streamableHttp mode
// listens on all interfaces) can then run in tests.
func LoopbackPreload(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "loopback.mjs")
	if err := os.WriteFile(path, []byte(loopbackModule), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lineMatcher picks the address out of a server's output line, and says
// which stream to watch.
type lineMatcher struct {
	stderr bool
	prefix string
}

func stdoutLine(prefix string) lineMatcher { return lineMatcher{prefix: prefix} }
func stderrLine(prefix string) lineMatcher { return lineMatcher{stderr: true, prefix: prefix} }

// Server is a server process a helper started.
type Server struct {
	// URL is the server's MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string
	// Addr is the address it listens on, 127.0.0.1:PORT.
	Addr string

	line   string // what followed the watched prefix
	out    *SyncBuffer
	cmd    *exec.Cmd
	exited chan struct{}
	done   chan struct{} // the output is drained
}

// Stop kills the server and waits for it to exit. It is idempotent, and runs
// by itself when the test ends.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
	<-s.done
}

// Output returns what the server has written so far, stdout and stderr
// interleaved. The fixture logs every request it refuses with
// -require-header ("refused POST /mcp: ...").
func (s *Server) Output() string { return s.out.String() }

// Exited is closed once the server process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// startProcess runs name with args (extra env on top of the test's), waits
// for the first line of the watched stream that starts with m.prefix, and
// keeps the rest of that line in Server.line. The process is killed, and
// waited for, when the test ends; its output is logged if the test failed.
func startProcess(t testing.TB, name string, args, env []string, m lineMatcher) *Server {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &SyncBuffer{}
	watchR, watchW := io.Pipe()
	if m.stderr {
		cmd.Stdout = out
		cmd.Stderr = io.MultiWriter(out, watchW)
	} else {
		cmd.Stdout = io.MultiWriter(out, watchW)
		cmd.Stderr = out
	}
	// A grandchild holding the pipes open must not hold up Wait.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("mcptest: start %s: %v", name, err)
	}
	exited := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
		_ = watchW.Close()
	}()
	srv := &Server{out: out, cmd: cmd, exited: exited, done: scanned}
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(name), out.String())
		}
	})

	found := make(chan string, 1)
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(watchR)
		sent := false
		for sc.Scan() {
			if line := sc.Text(); !sent && strings.HasPrefix(line, m.prefix) {
				found <- strings.TrimSpace(strings.TrimPrefix(line, m.prefix))
				sent = true
			}
		}
		// Keep draining so the child never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, watchR)
		close(found)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case s, ok := <-found:
		if !ok {
			t.Fatalf("mcptest: %s exited before printing %q:\n%s", filepath.Base(name), m.prefix, out.String())
		}
		srv.line = s
		return srv
	case <-timer.C:
		t.Fatalf("mcptest: %s did not print %q within %s:\n%s", filepath.Base(name), m.prefix, startTimeout, out.String())
		return nil
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a server's
// stdout and stderr, or a host's log handler.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Texts returns what each content block of res says, in order: the text of
// a text block, "<MIME>" (for example "<image/png>") for an image or audio
// block, and "<TYPE>" (for example "<*mcp.ResourceLink>") for any other.
func Texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, c.Text)
		case *mcp.ImageContent:
			out = append(out, "<"+c.MIMEType+">")
		case *mcp.AudioContent:
			out = append(out, "<"+c.MIMEType+">")
		default:
			out = append(out, fmt.Sprintf("<%T>", c))
		}
	}
	return out
}

// WaitFor re-checks cond every 10ms until it holds, and fails the test,
// naming what it waited for, once timeout has passed. Tests use it for state
// another process or goroutine produces, such as a server exiting or a
// reload landing, where there is no event to wait on.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// WAV returns a WAV clip of n samples of silence: mono, 8 kHz, 8-bit, so
// n/8000 seconds, for the audio of tool results (the fixture's and tests').
func WAV(n int) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(8000), uint32(8000), uint16(1), uint16(8)} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(n))
	b.Write(bytes.Repeat([]byte{0x80}, n))
	return b.Bytes()
}

// PNG returns a side×side PNG image, one red pixel on transparent, for the
// image results of tests.
func PNG(t testing.TB, side int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// CountFiles returns how many files (not directories) are under dir.
func CountFiles(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// FixtureWrites returns what the fixture started with args needs granted
// to write under the sandbox (which is on by default): the directory of
// each file a flag of args names (-starts-file, -cancel-file, ...), once
// each. Nothing else of the test's is granted.
func FixtureWrites(args ...string) []string {
	// The fixture's flags that name a file it writes or looks for.
	fileFlags := []string{"starts-file", "cancel-file", "crash-if-exists", "wait-file", "acts-file"}
	var dirs []string
	for i, a := range args {
		name := strings.TrimLeft(a, "-")
		if name == a || i+1 >= len(args) || !slices.Contains(fileFlags, name) {
			continue
		}
		if d := filepath.Dir(args[i+1]); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// SandboxWrite is the YAML of an entry's sandbox key granting dirs to
// write, as a flow mapping ("sandbox: {write: [...]}"), or "" without
// dirs.
func SandboxWrite(dirs ...string) string {
	if len(dirs) == 0 {
		return ""
	}
	q := make([]string, len(dirs))
	for i, d := range dirs {
		q[i] = fmt.Sprintf("%q", d)
	}
	return "sandbox: {write: [" + strings.Join(q, ", ") + "]}"
}
