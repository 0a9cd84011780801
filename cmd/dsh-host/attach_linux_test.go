package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestAttachRefusesAnotherUser connects to a host's socket as another user
// (uid 65534), with the directories and the socket opened up so that only
// the peer-credential check stands in the way: the host refuses the
// connection saying why, and the command line says so, exit 1, rather
// than attach or start a copy of its own. It needs root to
// switch users; elsewhere TestCheckPeer (internal/control) checks the
// function on a real connection.
func TestAttachRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	home := attachHome(t)
	file := writeComposition(t, greeterComposition)
	host, logs := startHostIn(t, home, file)
	t.Setenv("DSH_HOME", home)
	sock, err := control.SocketPath(file)
	if err != nil {
		t.Fatal(err)
	}
	// The binary where the other user may run it.
	binDir, err := os.MkdirTemp("", "dshbin")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(binDir)
	exe, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(binDir, "dsh-host")
	if err := os.WriteFile(other, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	asOther := func() *exec.Cmd {
		cmd := exec.Command(other, "status", "-c", file)
		cmd.Env = append(os.Environ(), "DSH_HOME="+home)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		return cmd
	}
	// As DSH_HOME is left: the directory keeps the other user out.
	out, err := asOther().CombinedOutput()
	if err == nil || strings.Contains(string(out), "starting") || !strings.Contains(string(out), "the running host refused the connection: "+sock+" is not this user's to connect to") {
		t.Errorf("another user's status with the socket's directory private (%v):\n%s", err, out)
	}
	// What a careless user might do: open the way to the socket.
	for path, mode := range map[string]os.FileMode{home: 0o711, filepath.Dir(sock): 0o711, sock: 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	out, err = asOther().CombinedOutput()
	want := fmt.Sprintf("the running host refused the connection: the running host (pid %d) answers only the user who started it (uid %d)", host.Process.Pid, os.Getuid())
	if err == nil || strings.Contains(string(out), "attached") || strings.Contains(string(out), "starting") || !strings.Contains(string(out), want) {
		t.Errorf("another user's status (%v), want it refused saying %q:\n%s", err, want, out)
	}
	mcptest.WaitFor(t, time.Minute, "the host to log the refusal", func() bool {
		return logs.has(func(m map[string]any) bool {
			return m["msg"] == "control socket: connections refused" && strings.Contains(fmt.Sprint(m["err"]), "runs as uid 65534")
		})
	})
}
