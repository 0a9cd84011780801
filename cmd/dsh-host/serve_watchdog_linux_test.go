package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"net"
)

// TestServeWatchdog: under a unit's WatchdogSec= (WATCHDOG_USEC), serve
// --http sends WATCHDOG=1 after READY=1, again and again while its
// gateway answers, and the MCP servers it starts inherit neither
// WATCHDOG_USEC nor WATCHDOG_PID.
func TestServeWatchdog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	socket := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 2 s: a keep-alive every second, each after a health probe bounded
	// by half a second. A shorter interval bounds the probe so tightly
	// (50 ms at 200 ms) that a loaded machine answers too late, and feeds
	// no watchdog for as long as it stays loaded.
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", "") // systemd names the main process; empty is none named
	p, _ := startNotified(t, ctx, socket)
	if ready := readNotify(t, conn); !strings.HasPrefix(ready, "READY=1\n") {
		t.Fatalf("first notification = %q, want READY=1", ready)
	}
	for range 3 {
		if got := readNotify(t, conn); got != "WATCHDOG=1" {
			t.Fatalf("notification = %q, want WATCHDOG=1", got)
		}
	}
	if env := fixtureEnv(t, ctx, p); strings.Contains(env, "WATCHDOG_") {
		t.Errorf("the MCP server inherited the watchdog's variables:\n%s", env)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		got := readNotify(t, conn)
		if strings.HasPrefix(got, "STOPPING=1\n") {
			break
		}
		if got != "WATCHDOG=1" {
			t.Fatalf("notification before STOPPING=1 = %q", got)
		}
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
}
