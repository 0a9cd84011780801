package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/usersock"
	_ "github.com/dsh-host/dsh-host/plugins/greeter"
	"github.com/dsh-host/dsh-host/services/tools"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// shortHome sets DSH_HOME to a new directory whose path is short enough
// for a socket (t.TempDir can be long).
func shortHome(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dshc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("DSH_HOME", dir)
	return dir
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSocketPath(t *testing.T) {
	home := shortHome(t)
	a := writeFile(t, filepath.Join(t.TempDir(), "composition.yml"), "plugins: []\n")
	b := writeFile(t, filepath.Join(t.TempDir(), "composition.yml"), "plugins: []\n")
	pa, err := SocketPath(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := SocketPath(b)
	if pa == pb {
		t.Errorf("two compositions in two directories share the socket %s", pa)
	}
	if filepath.Dir(pa) != filepath.Join(home, "run") || !strings.HasSuffix(pa, ".sock") {
		t.Errorf("socket %s, want one under %s/run", pa, home)
	}
	// Another name of the same file finds the same socket.
	link := filepath.Join(t.TempDir(), "link.yml")
	if err := os.Symlink(a, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	pl, _ := SocketPath(link)
	wd, _ := os.Getwd()
	t.Chdir(filepath.Dir(a))
	pr, _ := SocketPath("composition.yml")
	t.Chdir(wd)
	if pl != pa || pr != pa {
		t.Errorf("the same file has sockets %s (link) and %s (relative), want %s", pl, pr, pa)
	}

	t.Setenv("DSH_HOME", "/"+strings.Repeat("x", 100))
	if _, err := SocketPath(a); err == nil || !strings.Contains(err.Error(), "DSH_HOME") {
		t.Errorf("a socket path past the limit: %v, want an error naming DSH_HOME", err)
	}
}

func TestListenModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes do not apply on Windows")
	}
	home := shortHome(t)
	// A run directory someone opened up is closed again.
	if err := os.Mkdir(filepath.Join(home, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, filepath.Join(t.TempDir(), "composition.yml"), "plugins: []\n")
	l, err := Listen(file, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	path, _ := SocketPath(file)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	di, _ := os.Stat(filepath.Dir(path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
	}
}

// TestListenStaleAndLive: a socket file left by a host that died is
// replaced; one a live host answers on is not.
func TestListenStaleAndLive(t *testing.T) {
	shortHome(t)
	file := writeFile(t, filepath.Join(t.TempDir(), "composition.yml"), "plugins: []\n")
	path, _ := SocketPath(file)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// A dead host's socket: the file stays, nobody listens.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stale socket file is gone before the test: %v", err)
	}
	if _, err := Dial(context.Background(), file); !errors.Is(err, ErrNoHost) {
		t.Errorf("Dial on a stale socket: %v, want ErrNoHost", err)
	}

	l, err := Listen(file, quiet)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer l.Close()
	if _, err := Listen(file, quiet); !errors.Is(err, ErrInUse) {
		t.Errorf("a second Listen while the first is live: %v, want ErrInUse", err)
	}
	// The second Listen left the first's socket alone.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the first listener is unreachable after the second tried: %v", err)
	}
	c.Close()
	// Once the first stops, the socket is free to take.
	l.Close()
	l2, err := Listen(file, quiet)
	if err != nil {
		t.Fatalf("Listen after the first host closed: %v", err)
	}
	l2.Close()
}

// TestCheckPeer runs the peer-credential check on a real connection: this
// process's uid is accepted, any other refused. (The test cannot connect
// as another user without root and a second binary, so the check is
// called with another uid to expect.)
func TestCheckPeer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peer credentials are checked on Linux only")
	}
	shortHome(t)
	dir, _ := os.MkdirTemp("", "dshp")
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if err := usersock.CheckPeer(server, os.Getuid()); err != nil {
		t.Errorf("the same user refused: %v", err)
	}
	err = usersock.CheckPeer(server, os.Getuid()+1)
	if err == nil || !strings.Contains(err.Error(), "only the socket's user may connect") {
		t.Errorf("another uid: %v, want a refusal", err)
	}

	// The socket's listener answers a refused connection's request with
	// why, and closes it: the command line says so rather than take it
	// for no host.
	refusing := &sameUser{Listener: l, uid: os.Getuid() + 1, log: quiet, refuse: newRefuser()}
	defer refusing.refuse.stop()
	go refusing.Accept() // returns when l closes
	_, err = dialAt(context.Background(), filepath.Join(dir, "s"))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), fmt.Sprintf("answers only the user who started it (uid %d)", os.Getuid()+1)) {
		t.Errorf("a refused connection's Dial: %v; want ErrRefused saying why", err)
	}
}

// TestClientServer asks a host in this process through its socket, as the
// command line does.
func TestClientServer(t *testing.T) {
	shortHome(t)
	file := writeFile(t, filepath.Join(t.TempDir(), "composition.yml"), "plugins:\n  - {id: hi, name: greeter, config: {greeting: Hej}}\n")
	ctx := context.Background()
	h := host.New(&host.Options{Logger: quiet})
	c, err := host.ReadComposition(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(ctx)
	l, err := Listen(file, quiet)
	if err != nil {
		t.Fatal(err)
	}
	local := &app.Local{Host: h, File: file}
	srv := Serve(l, local, file, quiet)
	defer srv.Close()

	cl, err := Dial(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.PID != os.Getpid() || cl.File != file {
		t.Errorf("hello = %+v", cl.Hello)
	}
	st, err := cl.Status(ctx)
	if err != nil || host.Find(st.Instances, "hi").State != host.StateActive || st.ToolCounts["hi"] != 1 {
		t.Errorf("status: %+v, %v", st, err)
	}
	tl, err := cl.Tools(ctx, app.ToolsRequest{})
	if err != nil || len(tl.Tools) != 1 || tl.Tools[0].Name != "greet" {
		t.Errorf("tools: %+v, %v", tl, err)
	}
	p, err := cl.Prompt(ctx, app.ToolsRequest{})
	want, _ := local.Prompt(ctx, app.ToolsRequest{})
	if err != nil || p.ToolsJSON != want.ToolsJSON || p.Count != 1 {
		t.Errorf("prompt: %+v, %v; want %+v", p, err, want)
	}
	res, err := cl.Call(ctx, app.CallRequest{Tool: "greet", Args: []byte(`{"name":"Ada"}`)})
	if err != nil || res.Err != nil || len(res.Content) != 1 || res.Content[0].Text != "Hej, Ada!" {
		t.Errorf("call: %+v, %v", res, err)
	}
	res, err = cl.Call(ctx, app.CallRequest{Tool: "nope", Args: []byte(`{}`)})
	if err != nil || !errors.Is(res.Err, tools.ErrUnknownTool) {
		t.Errorf("unknown tool: %+v, %v; want ErrUnknownTool", res, err)
	}
	reply, err := cl.Command(ctx, app.CommandRequest{Line: "/nope"})
	if err != nil || !reply.Error {
		t.Errorf("unknown command: %+v, %v", reply, err)
	}
}

// TestRepointedLinkStillReachesTheHost: a host started on a symlink is
// reached through the link's name after the link is re-pointed (the host
// follows it at its next reload), and through the file it started on.
func TestRepointedLinkStillReachesTheHost(t *testing.T) {
	shortHome(t)
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "a.yml"), "plugins: []\n")
	b := writeFile(t, filepath.Join(dir, "b.yml"), "plugins: []\n")
	link := filepath.Join(dir, "composition.yml")
	if err := os.Symlink(a, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	h := host.New(&host.Options{Logger: quiet})
	defer h.Shutdown(context.Background())
	l, err := Listen(link, quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(l, &app.Local{Host: h, File: link}, link, quiet)
	defer srv.Close()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{link, a} {
		c, err := Dial(context.Background(), name)
		if err != nil {
			t.Errorf("Dial %s after the link moved: %v, want the running host", filepath.Base(name), err)
			continue
		}
		if c.PID != os.Getpid() {
			t.Errorf("Dial %s: pid %d, want %d", filepath.Base(name), c.PID, os.Getpid())
		}
		c.Close()
	}
	// Closed, the host leaves both sockets free.
	srv.Close()
	if _, err := Dial(context.Background(), link); !errors.Is(err, ErrNoHost) {
		t.Errorf("Dial after close: %v, want ErrNoHost", err)
	}
}
