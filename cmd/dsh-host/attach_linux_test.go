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
	"github.com/dsh-host/dsh-host/internal/mcptest"
)

// TestAttachRefusesAnotherUser connects to a host's socket as another user
// (uid 65534), with the directories and the socket opened up so that only
// the peer-credential check stands in the way: the host drops the
// connection, and the command line does not attach. It needs root to
// switch users; elsewhere TestCheckPeer (internal/control) checks the
// function on a real connection.
func TestAttachRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	home := attachHome(t)
	file := writeComposition(t, greeterComposition)
	_, logs := startHostIn(t, home, file)
	t.Setenv("DSH_HOME", home)
	sock, err := control.SocketPath(file)
	if err != nil {
		t.Fatal(err)
	}
	// What a careless user might do: open the way to the socket.
	for path, mode := range map[string]os.FileMode{home: 0o711, filepath.Dir(sock): 0o711, sock: 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
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
	cmd := exec.Command(other, "status", "-c", file)
	cmd.Env = append(os.Environ(), "DSH_HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "attached") || !strings.Contains(string(out), "cannot reach the running host") {
		t.Errorf("another user's status:\n%s", out)
	}
	mcptest.WaitFor(t, time.Minute, "the host to log the refusal", func() bool {
		return logs.has(func(m map[string]any) bool {
			return m["msg"] == "control socket: connections refused" && strings.Contains(fmt.Sprint(m["err"]), "runs as uid 65534")
		})
	})
}
