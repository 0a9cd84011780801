package serve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchdogEnvironment: WATCHDOG_USEC is read, and taken out of the
// environment with WATCHDOG_PID, so that the servers do not inherit
// them; it is ignored when WATCHDOG_PID names another process or when it
// is not a positive number.
func TestWatchdogEnvironment(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
	}{
		{"30000000", "", 30 * time.Second},
		{"500", strconv.Itoa(os.Getpid()), 500 * time.Microsecond},
		{"30000000", "1", 0},
		{"0", "", 0},
		{"-5", "", 0},
		{"30s", "", 0},
		{"99999999999999999999", "", 0},
	} {
		t.Setenv("WATCHDOG_USEC", tc.usec)
		if tc.pid != "" {
			t.Setenv("WATCHDOG_PID", tc.pid)
		} else {
			os.Unsetenv("WATCHDOG_PID")
		}
		if got := watchdogInterval(quiet); got != tc.want {
			t.Errorf("WATCHDOG_USEC=%s WATCHDOG_PID=%s: %v, want %v", tc.usec, tc.pid, got, tc.want)
		}
		for _, k := range []string{"WATCHDOG_USEC", "WATCHDOG_PID"} {
			if _, ok := os.LookupEnv(k); ok {
				t.Errorf("%s left in the environment", k)
			}
		}
	}
}

// TestWatchdogFedWhileHealthy: on a real unixgram socket, WATCHDOG=1 is
// sent only after a health check passed: the three that fail first send
// nothing.
func TestWatchdogFedWhileHealthy(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := &notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}, logger: slog.New(slog.NewTextHandler(io.Discard, nil)), watchdog: 20 * time.Millisecond}
	var checks atomic.Int32
	stop := n.watch(func(context.Context) error {
		if checks.Add(1) <= 3 {
			return errors.New("not yet")
		}
		return nil
	})
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound, not a timing
	buf := make([]byte, 64)
	for i := range 3 {
		k, _, err := conn.ReadFromUnix(buf)
		if err != nil {
			t.Fatal(err)
		}
		if string(buf[:k]) != "WATCHDOG=1" {
			t.Fatalf("datagram %d = %q, want WATCHDOG=1", i, buf[:k])
		}
		if c := checks.Load(); c < int32(4+i) {
			t.Fatalf("WATCHDOG=1 number %d after %d health checks, 3 of them failing", i+1, c)
		}
	}
	stop()
}
