package stdio

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// probeModeEnv makes the test binary run as runProbe's server (TestMain).
const probeModeEnv = "STDIO_TEST_PROBE"

// probeArgs is the one argument of every probe tool: a path, an address
// or a pid.
type probeArgs struct {
	Target string `json:"target"`
}

// runProbe is a stdio MCP server whose tools try what a compromised
// server would: read a file, write one, connect to a TCP address, signal
// a process. Each answers "ok" or the error it got.
func runProbe() {
	server := mcp.NewServer(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	probe := func(name string, try func(target string) error) {
		mcp.AddTool(server, &mcp.Tool{Name: name}, func(_ context.Context, _ *mcp.CallToolRequest, a probeArgs) (*mcp.CallToolResult, any, error) {
			text := "ok"
			if err := try(a.Target); err != nil {
				text = err.Error()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	}
	probe("read", func(p string) error { _, err := os.ReadFile(p); return err })
	probe("write", func(p string) error { return os.WriteFile(p, []byte("written by the probe"), 0o600) })
	probe("connect", func(addr string) error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	probe("exec", func(path string) error { return exec.Command(path).Run() })
	probe("unix", func(addr string) error {
		c, err := net.DialTimeout("unix", addr, 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	probe("udp", func(addr string) error {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("exfiltrated"))
		return err
	})
	probe("open", func(count string) error {
		n, err := strconv.Atoi(count)
		if err != nil {
			return err
		}
		var files []*os.File
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		for range n {
			f, err := os.Open("/dev/null")
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		return nil
	})
	probe("signal", func(pid string) error {
		n, err := strconv.Atoi(pid)
		if err != nil {
			return err
		}
		return syscall.Kill(n, 0)
	})
	_ = server.Run(context.Background(), &mcp.StdioTransport{})
}

// needLandlock skips a test on a system without Landlock, and fails it
// under CI=true, where the sandbox must be tested.
func needLandlock(t *testing.T) int {
	t.Helper()
	abi, why := sandbox.Support()
	if abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock is required under CI=true: %s", why)
		}
		t.Skip(why)
	}
	return abi
}

// probeWorld is what the probes aim at: a fake ~/.ssh/id_rsa under a HOME
// of the test's, a directory outside every grant, and a loopback TCP
// listener on a port not granted.
type probeWorld struct {
	home, secret, outside, addr string
	port                        int
	// tool is an executable outside the grants; abstract is an abstract
	// unix socket the test listens on, socket a pathname one (a Docker
	// socket's stand-in).
	tool, abstract, socket string
	// udp is a loopback UDP address; datagrams counts what it received.
	udp       string
	datagrams chan struct{}
}

func newProbeWorld(t *testing.T) *probeWorld {
	w := &probeWorld{home: t.TempDir(), outside: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(w.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	w.secret = filepath.Join(w.home, ".ssh", "id_rsa")
	if err := os.WriteFile(w.secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	w.addr = ln.Addr().String()
	w.port = ln.Addr().(*net.TCPAddr).Port
	w.tool = filepath.Join(w.outside, "tool")
	if err := os.WriteFile(w.tool, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.abstract = "@dsh-sandbox-test-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(w.home)
	ul, err := net.Listen("unix", w.abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A socket path must fit in 108 bytes: t.TempDir's may not.
	sockDir, err := os.MkdirTemp("", "sbx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	w.socket = filepath.Join(sockDir, "docker.sock")
	pl, err := net.Listen("unix", w.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	go func() {
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	w.udp, w.datagrams = pc.LocalAddr().String(), make(chan struct{}, 8)
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			w.datagrams <- struct{}{}
		}
	}()
	return w
}

// connectProbe starts the probe server under cfg.
func connectProbe(t *testing.T, w *probeWorld, cfg sandbox.Config, roots ...string) *mcp.ClientSession {
	t.Helper()
	tr := &Transport{Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     map[string]string{probeModeEnv: "1", "HOME": w.home},
		Logger:  slog.New(slog.DiscardHandler),
		Sandbox: cfg, Roots: roots}
	return mcptest.Connect(t, tr, nil)
}

// callProbe calls a probe tool and returns its answer.
func callProbe(t *testing.T, cs *mcp.ClientSession, tool, target string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: probeArgs{Target: target}})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, target, err)
	}
	return strings.Join(mcptest.Texts(res), "")
}

// TestSandboxRefusesWhatWasNotGranted: inside the sandbox the server
// cannot read a key under the user's home, write outside its grants,
// execute a program outside its grants, connect to a loopback port not
// granted, send a UDP datagram, connect to a unix socket (pathname or
// abstract), read the host's environment through /proc, nor signal the
// host; with mode off the same probes succeed, so the refusals are the
// sandbox's.
func TestSandboxRefusesWhatWasNotGranted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux's")
	}
	abi := needLandlock(t)
	w := newProbeWorld(t)
	host := strconv.Itoa(os.Getpid())
	type probe struct{ tool, target, refusal string }
	probes := []probe{
		{"read", w.secret, "permission denied"},
		{"write", filepath.Join(w.outside, "planted"), "permission denied"},
		{"write", filepath.Join(w.home, ".bashrc"), "permission denied"},
	}
	if abi >= 4 {
		probes = append(probes, probe{"connect", w.addr, "permission denied"})
	}
	// The host's environment through /proc: Landlock refuses a domain's
	// process ptrace-class access to a process outside it.
	probes = append(probes, probe{"read", "/proc/" + host + "/environ", "permission denied"})
	probes = append(probes, probe{"exec", w.tool, "permission denied"})
	if abi >= 6 {
		probes = append(probes, probe{"signal", host, "operation not permitted"})
	}
	// Seccomp refuses the sockets (Landlock's scoping would refuse the
	// abstract one too: TestSandboxGrants).
	probes = append(probes, probe{"udp", w.udp, "permission denied"},
		probe{"unix", w.socket, "permission denied"}, probe{"unix", w.abstract, "permission denied"})
	for _, mode := range []string{sandbox.ModeStrict, sandbox.ModeAuto} {
		cs := connectProbe(t, w, sandbox.Config{Mode: mode})
		for _, p := range probes {
			if got := callProbe(t, cs, p.tool, p.target); !strings.Contains(got, p.refusal) {
				t.Errorf("mode %s: %s %s = %q, want it refused (%s)", mode, p.tool, p.target, got, p.refusal)
			}
		}
		cs.Close()
	}
	select {
	case <-w.datagrams:
		t.Error("a refused datagram arrived")
	default:
	}
	cs := connectProbe(t, w, sandbox.Config{Mode: sandbox.ModeOff})
	for _, p := range probes {
		if got := callProbe(t, cs, p.tool, p.target); got != "ok" {
			t.Errorf("mode off: %s %s = %q, want ok (the probe itself must work)", p.tool, p.target, got)
		}
	}
	<-w.datagrams // sent before the probe answered
}

// TestSandboxGrants: what an entry grants is allowed, and only that: a
// read grant does not allow writing, a write grant and a root do, a
// granted port can be connected to, UDP and a pathname unix socket once
// allowed; an abstract unix socket outside the sandbox stays refused by
// Landlock's scoping even with unix sockets allowed.
func TestSandboxGrants(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux's")
	}
	abi := needLandlock(t)
	w := newProbeWorld(t)
	readable, writable, root := t.TempDir(), t.TempDir(), t.TempDir()
	doc := filepath.Join(readable, "doc.txt")
	if err := os.WriteFile(doc, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := sandbox.Config{Mode: sandbox.ModeStrict, Read: []string{readable}, Write: []string{writable},
		Connect: sandbox.Ports{List: []uint16{uint16(w.port)}}, Unix: true}
	cs := connectProbe(t, w, cfg, root)
	want := []struct{ tool, target, want string }{
		{"read", doc, "ok"},
		{"write", filepath.Join(readable, "new"), "permission denied"},
		{"write", filepath.Join(writable, "new"), "ok"},
		{"write", filepath.Join(root, "new"), "ok"},
		{"read", w.secret, "permission denied"},
	}
	if abi >= 4 {
		want = append(want, struct{ tool, target, want string }{"connect", w.addr, "ok"})
	}
	// udp follows connect; unix: true.
	want = append(want, struct{ tool, target, want string }{"udp", w.udp, "ok"},
		struct{ tool, target, want string }{"unix", w.socket, "ok"})
	if abi >= 6 {
		want = append(want, struct{ tool, target, want string }{"unix", w.abstract, "operation not permitted"})
	}
	for _, c := range want {
		if got := callProbe(t, cs, c.tool, c.target); !strings.Contains(got, c.want) {
			t.Errorf("%s %s = %q, want %q", c.tool, c.target, got, c.want)
		}
	}
}

// TestSandboxedExitNamesTheKeys: a sandboxed server that dies at start
// (here a shell refused the key it reads) gets an error that says the
// sandbox may be the cause and which keys widen it; unsandboxed, the
// same failure does not blame the sandbox.
func TestSandboxedExitNamesTheKeys(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux's")
	}
	needLandlock(t)
	w := newProbeWorld(t)
	for _, mode := range []string{sandbox.ModeStrict, sandbox.ModeOff} {
		tr := &Transport{Command: "/bin/sh", Args: []string{"-c", `cat "$HOME/.ssh/id_rsa" >/dev/null || exit 3; exit 4`},
			Env: map[string]string{"HOME": w.home}, Logger: slog.New(slog.DiscardHandler), Sandbox: sandbox.Config{Mode: mode}}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err == nil {
			cancel()
			t.Fatalf("mode %s: connect succeeded", mode)
		}
		err = tr.Explain(ctx, err)
		cancel()
		switch mode {
		case sandbox.ModeStrict:
			if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "Permission denied") || !strings.Contains(err.Error(), "sandbox.read: ["+filepath.Join(w.home, ".ssh")+"]") {
				t.Errorf("sandboxed: %v\nwant exit 3, the refusal and the keys", err)
			}
		default:
			if !strings.Contains(err.Error(), "exit status 4") || strings.Contains(err.Error(), "sandbox") {
				t.Errorf("unsandboxed: %v\nwant exit 4 without a sandbox hint", err)
			}
		}
	}
}

// TestSandboxedGoRun: the in-repo fixture started the way the default
// composition starts it, `go run ./testdata/mcpfixture` from the module
// root, works under strict with nothing granted beyond the defaults (Go's
// root, module cache and build cache, the module).
func TestSandboxedGoRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux's")
	}
	needLandlock(t)
	if testing.Short() {
		t.Skip("go run compiles the fixture")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	tr := &Transport{Command: goBin, Args: []string{"run", "./testdata/mcpfixture"}, Dir: mcptest.ModuleRoot(t),
		Logger: slog.New(slog.DiscardHandler), Sandbox: sandbox.Config{Mode: sandbox.ModeStrict}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(tr.Explain(ctx, err))
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || !strings.Contains(strings.Join(mcptest.Texts(res), ""), "5") {
		t.Errorf("add = %v, %v", res, err)
	}
}

// TestSandboxLimits: an entry's limits reach the server through the
// transport: past sandbox.limits.files it cannot open a file, and without
// the key it can (the limits of every kind, for Go and Node servers and
// as another user, are internal/sandbox's TestLimitsBind).
func TestSandboxLimits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the limits are set by the Linux launcher")
	}
	needLandlock(t)
	w := newProbeWorld(t)
	limited := connectProbe(t, w, sandbox.Config{Mode: sandbox.ModeStrict, Limits: sandbox.Limits{Files: 64}})
	if got := callProbe(t, limited, "open", "100"); !strings.Contains(got, "too many open files") {
		t.Errorf("opening 100 files under files: 64 = %q, want too many open files", got)
	}
	free := connectProbe(t, w, sandbox.Config{Mode: sandbox.ModeStrict})
	if got := callProbe(t, free, "open", "100"); got != "ok" {
		t.Errorf("opening 100 files without the limit = %q, want ok", got)
	}
}

// TestSandboxedPythonFixture: the stdlib-only Python fixture server
// (testdata/pyfixture), started as `python3 server.py` with the python3
// of PATH (a pyenv shim on some machines), serves under the default
// sandbox, unchanged and with nothing granted.
func TestSandboxedPythonFixture(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux's")
	}
	needLandlock(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required under CI")
		}
		t.Skip("no python3 on PATH")
	}
	root := mcptest.ModuleRoot(t)
	logs := &mcptest.Logs{}
	tr := &Transport{Command: py, Args: []string{filepath.Join(root, "testdata", "pyfixture", "server.py")},
		Dir: t.TempDir(), Logger: slog.New(logs)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(tr.Explain(ctx, err))
	}
	defer cs.Close()
	if !strings.HasPrefix(tr.SandboxReport(), "sandboxed (landlock v") {
		t.Errorf("report = %q, want sandboxed by default", tr.SandboxReport())
	}
	if !logs.Has(slog.LevelInfo, "sandboxed (landlock v") {
		t.Errorf("no info line says what is enforced:\n%s", logs.Dump())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || strings.Join(mcptest.Texts(res), "") != "5" {
		t.Errorf("add = %v, %v", res, err)
	}
}

// TestUndetectedRuntimeNamesTheKey: a server whose runtime the sandbox
// cannot find from its command line (a wrapper script that runs a program
// elsewhere) fails at start, and the error names the key that grants it,
// with the directory the kernel refused.
func TestUndetectedRuntimeNamesTheKey(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux's")
	}
	needLandlock(t)
	rt := filepath.Join(t.TempDir(), "runtime")
	if err := os.WriteFile(rt, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "server.sh")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec "+rt+" serve\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := &Transport{Command: wrapper, Logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err == nil {
		t.Fatal("connect succeeded")
	}
	err = tr.Explain(ctx, err)
	if want := "sandbox.read: [" + filepath.Dir(rt) + "]"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v\nwant it to name %s", err, want)
	}
}
