package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestMeasureIdle measures the gateway's resident memory and descriptors
// with 1,000 idle connections and then 1,000 idle sessions, before and
// after their timeouts. The clients run in a child process (this test
// binary again), so the figures are the server's alone. Not a CI test:
// DSH_MEASURE=1 go test -run TestMeasureIdle -v ./gateway/
func TestMeasureIdle(t *testing.T) {
	if os.Getenv("DSH_MEASURE_CLIENT") != "" {
		measureClient(t)
		return
	}
	if os.Getenv("DSH_MEASURE") == "" {
		t.Skip("a measurement, not a test: set DSH_MEASURE=1")
	}
	const n = 1000
	const timeout = 2 * time.Second
	s := host.NewScope(context.Background(), "measure", slog.New(slog.DiscardHandler))
	defer s.Dispose(wait)
	reg := tools.New(nil)
	register(t, reg, echo("echo"))
	g, err := New(s, reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(s, g, ln, serveOptions{idle: timeout, limits: Limits{MaxConnections: 2 * n, MaxSessions: 2 * n, SessionTimeout: timeout}})
	report := func(what string) {
		runtime.GC()
		debug.FreeOSMemory()
		rss, fds := usage(t)
		t.Logf("%-44s VmRSS %6d kB  fds %5d  sessions %5d", what, rss, fds, httpSessions(g))
	}
	report("baseline")
	_, baseFDs := usage(t)
	for _, mode := range []string{"connections", "sessions"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureIdle$")
		cmd.Env = append(os.Environ(), "DSH_MEASURE_CLIENT="+mode, "DSH_MEASURE_ADDR="+ln.Addr().String(), "DSH_MEASURE_N="+strconv.Itoa(n))
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("client: %v", err)
			}
			if strings.HasPrefix(line, "ready") {
				break
			}
		}
		report(fmt.Sprintf("%d idle %s", n, mode))
		start := time.Now()
		if mode == "sessions" {
			mcptest.WaitFor(t, 10*timeout, "sessions expired", func() bool { return httpSessions(g) == 0 })
		} else {
			mcptest.WaitFor(t, 10*timeout, "connections closed", func() bool { _, fds := usage(t); return fds <= baseFDs+3 }) // + the pipes to the client and its pidfd
		}
		report(fmt.Sprintf("after the %v timeout (%v)", timeout, time.Since(start).Round(100*time.Millisecond)))
		stdin.Close()
		go io.Copy(io.Discard, br)
		cmd.Wait()
	}
}

// usage returns the process's VmRSS (kB) and open descriptors.
func usage(t *testing.T) (rss, fds int) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("needs /proc")
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			rss, _ = strconv.Atoi(f[1])
		}
	}
	ents, _ := os.ReadDir("/proc/self/fd")
	return rss, len(ents)
}

// measureClient holds n idle connections (one request each, then kept
// alive) or n idle sessions (initialized over a few connections) until
// its stdin closes.
func measureClient(t *testing.T) {
	addr, mode := os.Getenv("DSH_MEASURE_ADDR"), os.Getenv("DSH_MEASURE_CLIENT")
	n, _ := strconv.Atoi(os.Getenv("DSH_MEASURE_N"))
	switch mode {
	case "connections":
		var conns []net.Conn
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			conns = append(conns, c)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
	case "sessions":
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		for range n {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("initialize: %d", resp.StatusCode)
			}
		}
		defer client.CloseIdleConnections()
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}
