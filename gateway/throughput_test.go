package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// BenchmarkThroughput measures tool calls per second under concurrent load:
// N clients (go-sdk sessions over Streamable HTTP, each on its own
// connection) call a fixture tool as fast as they can, directly on the
// fixture server and through `dsh-host serve --http` whose mcp-client
// reaches that server over stdio (upstream=stdio) or over Streamable HTTP
// (upstream=http, the very server the direct clients call).
//
// Each iteration is one round: a phase of direct load and a phase of load
// through the gateway, in alternating order, so that both see the same
// machine. It reports the calls per second of each and the gateway's share
// of the direct figure in percent.
//
//	go test -run '^$' -bench Throughput -benchtime 8x ./gateway
//
// DSH_BENCH_CLIENTS sets N (default 32) and DSH_BENCH_PHASE the length of a
// phase (default 1s): many short phases average out a shared machine's
// bursts better than a few long ones. DSH_BENCH_GATEWAY=inprocess runs the gateway in the
// benchmark's process instead of a dsh-host process, so that -cpuprofile
// covers it.
func BenchmarkThroughput(b *testing.B) {
	b.Setenv("DSH_HOME", b.TempDir())
	clients := envInt(b, "DSH_BENCH_CLIENTS", 32)
	phase := time.Second
	if v := os.Getenv("DSH_BENCH_PHASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("DSH_BENCH_PHASE: %v", err)
		}
		phase = d
	}
	fixture := mcptest.FixtureBinary(b)
	direct := mcptest.StartHTTPFixture(b)
	upstreams := []struct{ name, config string }{
		{"stdio", fmt.Sprintf("transport: stdio\n      command: %q", fixture)},
		{"http", fmt.Sprintf("transport: streamable-http\n      url: %q", direct)},
	}
	calls := []struct {
		tool string
		args json.RawMessage
	}{
		{"ping", nil},
		{"add", json.RawMessage(`{"a":2,"b":3}`)},
	}
	for _, up := range upstreams {
		b.Run("upstream="+up.name, func(b *testing.B) {
			composition := fmt.Sprintf("plugins:\n  - id: fixture\n    name: mcp-client\n    config:\n      serverName: fx\n      %s\n", up.config)
			gateway := startGateway(b, composition)
			for _, c := range calls {
				b.Run(fmt.Sprintf("%s/clients=%d", c.tool, clients), func(b *testing.B) {
					paths := []*loadPath{
						{name: "direct", tool: c.tool, sessions: loadSessions(b, direct, clients)},
						{name: "gateway", tool: "mcp__fx__" + c.tool, sessions: loadSessions(b, gateway, clients)},
					}
					for _, p := range paths {
						p.run(b, c.args, phase/4) // warm connections and caches
						p.calls, p.elapsed = 0, 0
					}
					i := 0
					for b.Loop() {
						for k := range paths {
							paths[(i+k)%len(paths)].run(b, c.args, phase)
						}
						i++
					}
					d, g := paths[0].rate(), paths[1].rate()
					b.ReportMetric(d, "direct-calls/s")
					b.ReportMetric(g, "gateway-calls/s")
					b.ReportMetric(100*g/d, "gateway/direct-%")
				})
			}
		})
	}
}

// loadPath is one way to the fixture's tool, with its sessions and the
// calls it completed so far.
type loadPath struct {
	name     string
	tool     string
	sessions []*mcp.ClientSession
	calls    int64
	elapsed  time.Duration
}

// run has every session call the tool back to back for d.
func (p *loadPath) run(b *testing.B, args json.RawMessage, d time.Duration) {
	var n atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	start := time.Now()
	deadline := start.Add(d)
	for _, cs := range p.sessions {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: p.tool, Arguments: args})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %q", mcptest.Texts(res))
				}
				if err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatalf("%s %s: %v", p.name, p.tool, *err)
	}
	p.calls += n.Load()
	p.elapsed += time.Since(start)
}

func (p *loadPath) rate() float64 { return float64(p.calls) / p.elapsed.Seconds() }

// loadSessions connects n clients to url, each with its own HTTP
// connection, as n separate clients would be; they close when the
// benchmark ends.
func loadSessions(b *testing.B, url string, n int) []*mcp.ClientSession {
	b.Helper()
	sessions := make([]*mcp.ClientSession, n)
	for i := range sessions {
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		sessions[i] = cs
		b.Cleanup(func() {
			cs.Close()
			hc.CloseIdleConnections()
		})
	}
	return sessions
}

// startGateway serves composition through a gateway on a free loopback
// port and returns its endpoint: `dsh-host serve --http`, or, with
// DSH_BENCH_GATEWAY=inprocess, a host in this process.
func startGateway(b *testing.B, composition string) string {
	b.Helper()
	if os.Getenv("DSH_BENCH_GATEWAY") == "inprocess" {
		h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
		b.Cleanup(func() { h.Shutdown(context.Background()) })
		c, err := host.ParseComposition("bench.yml", []byte(composition+"  - {id: gateway, name: gateway, config: {http: \"127.0.0.1:0\"}}\n"), nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Update(context.Background(), c); err != nil {
			b.Fatal(err)
		}
		st := host.Find(h.Status(), "gateway")
		if st.State != host.StateActive || !strings.HasPrefix(st.Detail, "http://") {
			b.Fatalf("gateway not serving: %+v", h.Status())
		}
		return st.Detail
	}
	file := filepath.Join(b.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(composition), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(dshHostBinary(b), "serve", "--http", "127.0.0.1:0", "--log-format", "json", "-c", file)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	urls := make(chan string, 1)
	var log mcptest.SyncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			var rec struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.URL != "" && strings.Contains(rec.Msg, "Streamable HTTP") {
				select {
				case urls <- rec.URL:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-copied
		if err := cmd.Wait(); err != nil {
			b.Errorf("dsh-host serve exited with %v after SIGTERM; stderr:\n%s", err, log.String())
		}
	})
	select {
	case url := <-urls:
		return url
	case <-copied:
		b.Fatalf("dsh-host serve exited before listening; stderr:\n%s", log.String())
	case <-time.After(30 * time.Second):
		b.Fatalf("dsh-host serve did not listen within 30s; stderr:\n%s", log.String())
	}
	return ""
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
