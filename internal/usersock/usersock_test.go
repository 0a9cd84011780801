package usersock

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestListen: one process holds a socket; the next gets ErrInUse until
// it lets go; the peer it accepts is this user, with this pid.
func TestListen(t *testing.T) {
	dir, err := os.MkdirTemp("", "dshu")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	t.Setenv("DSH_HOME", dir)
	path, err := Path(filepath.Join(t.TempDir(), "c.yml"), ".x.sock")
	if err != nil || !strings.HasPrefix(path, filepath.Join(dir, "run")) || !strings.HasSuffix(path, ".x.sock") {
		t.Fatalf("Path: %s, %v", path, err)
	}
	l, unlock, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Errorf("a second Listen: %v, want ErrInUse", err)
	}
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		done <- c
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	server := <-done
	defer server.Close()
	if err := CheckPeer(server, os.Getuid()); err != nil {
		t.Errorf("this user refused: %v", err)
	}
	if runtime.GOOS == "linux" {
		if err := CheckPeer(server, os.Getuid()+1); err == nil {
			t.Error("another uid accepted")
		}
		if pid := PeerPID(c); pid != os.Getpid() {
			t.Errorf("PeerPID = %d, want %d", pid, os.Getpid())
		}
	}
	l.Close()
	unlock()
	l2, unlock2, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen once the first let go: %v", err)
	}
	l2.Close()
	unlock2()
}
