package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// listenUnix listens on a fresh socket in a directory short enough for
// one (t.TempDir can be too long), removed when the test ends.
func listenUnix(t *testing.T) (path string, l net.Listener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "dshs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path = filepath.Join(dir, "s")
	l, err = net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return path, l
}

// limitedServer serves an empty host on a fresh socket with lim, for the
// rest of the test, and returns the socket's path.
func limitedServer(t *testing.T, lim limits, logger *slog.Logger) string {
	t.Helper()
	path, l := listenUnix(t)
	h := host.New(&host.Options{Logger: quiet})
	srv := serve(l, &app.Local{Host: h, File: "c.yml"}, "c.yml", logger, lim)
	t.Cleanup(func() { srv.Close(); h.Shutdown(t.Context()) })
	return path
}

func dialUnix(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// closedSoon asserts that the server closes c before c's deadline.
func closedSoon(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection is still open")
	}
}

// TestControlBodyCapped: a request body past the cap is answered 413
// without being read whole.
func TestControlBodyCapped(t *testing.T) {
	lim := defaultLimits()
	lim.body = 64 << 10
	path := limitedServer(t, lim, quiet)
	c := dialUnix(t, path)
	body := `{"tool":"x","args":{"a":"` + strings.Repeat("a", 1<<20) + `"}}`
	go fmt.Fprintf(c, "POST /v1/call HTTP/1.1\r\nHost: dsh\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body past the cap: %d, want 413", resp.StatusCode)
	}
}

// TestControlIdleAndSilentConnectionsClosed: a connection that sends no
// request, or stays idle after one, is closed.
func TestControlIdleAndSilentConnectionsClosed(t *testing.T) {
	silent := defaultLimits()
	silent.readHeader = 100 * time.Millisecond
	closedSoon(t, dialUnix(t, limitedServer(t, silent, quiet)))
	// Only the idle bound is short here: a short header bound would race
	// this test's own sending of its request on a loaded machine.
	idle := defaultLimits()
	idle.idle = 100 * time.Millisecond
	c := dialUnix(t, limitedServer(t, idle, quiet))
	fmt.Fprint(c, "GET /v1/hello HTTP/1.1\r\nHost: dsh\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after an answer and the idle timeout: %v, want EOF", err)
	}
}

// TestControlConnectionsCapped: past the cap a connection is closed at
// once, and the refusals are one log line; a freed place is taken again.
func TestControlConnectionsCapped(t *testing.T) {
	const max, extra = 3, 20
	lim := defaultLimits()
	lim.conns = max
	// One interval for the whole test, however slow the machine: the
	// second line would otherwise come from a clock, not from a flood.
	lim.refuseEvery = time.Hour
	log := &mcptest.SyncBuffer{}
	path := limitedServer(t, lim, slog.New(slog.NewTextHandler(log, nil)))
	held := make([]net.Conn, max)
	for i := range held {
		held[i] = dialUnix(t, path)
		fmt.Fprint(held[i], "GET /v1/hello HTTP/1.1\r\nHost: dsh\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(held[i]), nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d under the cap: %v", i, err)
		}
	}
	var wg sync.WaitGroup
	for range extra {
		wg.Go(func() { closedSoon(t, dialUnix(t, path)) })
	}
	wg.Wait()
	held[0].Close()
	mcptest.WaitFor(t, 10*time.Second, "a connection served after one closed", func() bool {
		c := dialUnix(t, path)
		defer c.Close()
		fmt.Fprint(c, "GET /v1/hello HTTP/1.1\r\nHost: dsh\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		return err == nil && resp.StatusCode == http.StatusOK
	})
	if lines := strings.Count(log.String(), "connections refused past the limit"); lines != 1 {
		t.Errorf("%d refusal lines, want 1:\n%s", lines, log.String())
	}
}

// TestRateLog: a burst of refusals is one line at once, with its count
// carried to the next line once the interval has passed.
func TestRateLog(t *testing.T) {
	var lines []int
	r := &rateLog{every: time.Hour, emit: func(n int) { lines = append(lines, n) }}
	for range 50 {
		r.Add()
	}
	r.last = time.Now().Add(-2 * time.Hour)
	r.Add()
	if fmt.Sprint(lines) != "[1 50]" {
		t.Errorf("lines %v, want [1 50]", lines)
	}
}

// TestControlCapRefusalSaysWhy: past the cap, Dial is refused with
// ErrRefused saying the host's pid and limit, not taken for no host.
func TestControlCapRefusalSaysWhy(t *testing.T) {
	lim := defaultLimits()
	lim.conns = 1
	path := limitedServer(t, lim, quiet)
	held := dialUnix(t, path)
	fmt.Fprint(held, "GET /v1/hello HTTP/1.1\r\nHost: dsh\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(held), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the connection under the cap: %v", err)
	}
	_, err := dialAt(t.Context(), path)
	want := fmt.Sprintf("the running host (pid %d) has 1 connections open on its control socket, the most it takes", os.Getpid())
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Errorf("Dial past the cap: %v; want ErrRefused saying %q", err, want)
	}
}
