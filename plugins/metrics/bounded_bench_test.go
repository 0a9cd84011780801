package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// BenchmarkScrapeSize measures what the tool label costs: a fixture
// server offering DSH_BENCH_TOOLS tools (default 10,000), each called once
// through the gateway, then one scrape: its lines and bytes, and the
// process's resident memory (the host runs in it) with the tool label on,
// capped at 100 and off. Run each variant in a process of its own, so
// that one's memory is not the next one's:
//
//	for v in name limit100 none; do go test -run '^$' -bench "ScrapeSize/$v" -benchtime 1x -timeout 20m ./plugins/metrics; done
func BenchmarkScrapeSize(b *testing.B) {
	n := 10000
	if s := os.Getenv("DSH_BENCH_TOOLS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	for _, v := range []struct{ name, config string }{
		{"name", ""}, {"limit100", ", toolLabelLimit: 100"}, {"none", ", toolLabel: none"},
	} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				lines, bytes, rss := scrapeAfterCalls(b, v.config, n)
				b.ReportMetric(float64(lines), "lines/scrape")
				b.ReportMetric(float64(bytes)/1e6, "MB/scrape")
				b.ReportMetric(float64(rss)/1e6, "MB-RSS")
			}
		})
	}
}

// scrapeAfterCalls starts a host whose fixture offers n tools, calls each
// once, and scrapes: the scrape's lines and bytes, and VmRSS after it.
func scrapeAfterCalls(b *testing.B, config string, n int) (lines, size int, rss int64) {
	b.Setenv("DSH_HOME", b.TempDir())
	h := newHost(b, io.Discard)
	yml := "plugins:\n  - {id: gw, name: gateway, config: {http: \"127.0.0.1:0\"}}\n" +
		"  - {id: m, name: metrics, config: {listen: \"127.0.0.1:0\"" + config + "}}\n" +
		fmt.Sprintf("  - id: fixture\n    name: mcp-client\n    config: {serverName: fx, transport: stdio, command: %q, args: [-extra-tools, \"%d\"]}\n", mcptest.FixtureBinary(b), n)
	if err := apply(b, h, yml); err != nil {
		b.Fatal(err)
	}
	mcpURL := host.Find(h.Status(), "gw").Detail
	url := metricsURL(b, h, "m")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer hc.CloseIdleConnections()
	cs := mcptest.Connect(b, &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: hc}, nil)
	names := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}}); err != nil {
					b.Error(name, err)
				}
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("mcp__fx__filler_%03d", i+1)
	}
	close(names)
	wg.Wait()
	code, body := scrape(b, url)
	if code != http.StatusOK {
		b.Fatalf("scrape: %d", code)
	}
	runtime.GC()
	return strings.Count(body, "\n"), len(body), vmRSS(b)
}

// vmRSS is the process's resident memory, from /proc/self/status.
func vmRSS(b *testing.B) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status:", err)
	}
	for _, l := range strings.Split(string(s), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
