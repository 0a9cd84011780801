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
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
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
	g, err := New(s, reg, &Config{Limits: Limits{MaxConnections: 2 * n, MaxSessions: 2 * n, SessionTimeout: timeout, MaxConnectionsPerCaller: 2 * n, MaxSessionsPerCaller: 2 * n}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(s, g, ln, serveOptions{idle: timeout})
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

// TestMeasureSlowReaders measures the gateway's resident memory (now and
// at its peak) with n clients that each ask for a 7 MB answer and never
// read it, with the answer budget (maxHeldAnswerBytes) at its default or
// off. The clients run in a child process. Not a CI test:
//
//	DSH_MEASURE=1 DSH_MEASURE_BUDGET=off go test -run TestMeasureSlowReaders -v ./gateway/
//	DSH_MEASURE=1 go test -run TestMeasureSlowReaders -v ./gateway/
func TestMeasureSlowReaders(t *testing.T) {
	if os.Getenv("DSH_MEASURE_CLIENT") == "slow" {
		slowClients(t)
		return
	}
	if os.Getenv("DSH_MEASURE") == "" {
		t.Skip("a measurement, not a test: set DSH_MEASURE=1")
	}
	n := 60
	if v, err := strconv.Atoi(os.Getenv("DSH_MEASURE_N")); err == nil {
		n = v
	}
	budget := int64(0) // the default
	switch v := os.Getenv("DSH_MEASURE_BUDGET"); v {
	case "off":
		budget = -1
	case "":
	default:
		budget, _ = strconv.ParseInt(v, 10, 64)
	}
	// serve's own soft limit (cmd/dsh-host), so that garbage is not
	// counted as held.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(256 << 20))
	s := host.NewScope(context.Background(), "measure", slog.New(slog.DiscardHandler))
	defer s.Dispose(wait)
	reg := tools.New(nil)
	bigTool(t, reg, 7<<20)
	g, err := New(s, reg, &Config{Limits: Limits{MaxCallsPerSession: 2 * n, MaxCalls: 2 * n, MaxConnections: 4 * n, MaxSessions: 4 * n, MaxHeldAnswerBytes: budget,
		MaxConnectionsPerCaller: 4 * n, MaxSessionsPerCaller: 4 * n}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(s, g, ln, serveOptions{})
	runtime.GC()
	rss, _ := usage(t)
	t.Logf("baseline: VmRSS %d kB", rss)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureSlowReaders$")
	cmd.Env = append(os.Environ(), "DSH_MEASURE_CLIENT=slow", "DSH_MEASURE_ADDR="+ln.Addr().String(), "DSH_MEASURE_N="+strconv.Itoa(n))
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
	// Every call answered (or refused), none read: the answers are held
	// until writeTimeout (30 s) cuts their clients.
	mcptest.WaitFor(t, time.Minute, "the calls to end", func() bool { return g.calls.inFlight() == 0 })
	// go-sdk encodes each answer after its call has left the gateway:
	// give the last encodings time to end (well within writeTimeout,
	// 30 s, which lets go of the held answers).
	time.Sleep(12 * time.Second)
	rss, _ = usage(t)
	runtime.GC()
	debug.FreeOSMemory()
	live, _ := usage(t)
	if f := os.Getenv("DSH_MEASURE_HEAP"); f != "" {
		out, _ := os.Create(f)
		pprof.WriteHeapProfile(out)
		out.Close()
	}
	held := int64(0)
	if b := g.answers.Load(); b != nil {
		held = b.held.Load()
	}
	t.Logf("%d clients not reading 7 MB answers, budget %v: VmRSS %d kB (%d kB after a GC), peak VmHWM %d kB, answer bytes held %d", n, budget, rss, live, peakRSS(t), held)
	stdin.Close()
	go io.Copy(io.Discard, br)
	cmd.Wait()
}

// peakRSS returns the process's VmHWM (kB).
func peakRSS(t *testing.T) int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("needs /proc")
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// slowClients opens n sessions, sends each a call of big on a connection
// of its own, and never reads the answers, until its stdin closes.
func slowClients(t *testing.T) {
	addr := os.Getenv("DSH_MEASURE_ADDR")
	n, _ := strconv.Atoi(os.Getenv("DSH_MEASURE_N"))
	url := "http://" + addr + "/mcp"
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		status, id, _ := openSession(t, url)
		if status != http.StatusOK {
			t.Fatalf("initialize: %d", status)
		}
		rawPost(t, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{}}}`
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s",
			addr, id, len(call), call)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}
