package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpoutput"
)

// BenchmarkGatewayVsDirect measures one trivial tool call (the fixture's
// ping) made by a go-sdk client through the gateway (client → gateway →
// registry pipeline → mcp-client → fixture server over stdio) against the
// same client calling the fixture server directly over stdio. Each
// iteration makes one call of each kind, interleaved, so that all see the
// same machine load; the result is reported as direct-µs/call,
// gateway-µs/call and gateway/direct, and the same for the medians.
//
//   - inprocess: the client reaches an in-process gateway (a `gateway`
//     instance of the composition) over go-sdk's in-memory transport: the
//     cost of the gateway and the pipeline alone.
//   - stdio: the client starts `dsh-host serve --stdio`, as Claude Code or
//     Codex would: the deployment's cost, one more stdio hop included.
//     A third path starts the fixture as a bare go-sdk proxy of another
//     fixture (-proxy-of: a client session and a server, each call passed
//     through as it came): the same two hops with nothing of the host's.
//     p50-proxy/direct is the floor any go-sdk stdio proxy stands on, and
//     p50-gateway/proxy what dsh-host adds to it.
func BenchmarkGatewayVsDirect(b *testing.B) {
	b.Setenv("DSH_HOME", b.TempDir())
	fixture := mcptest.FixtureBinary(b)
	composition := fmt.Sprintf(`plugins:
  - id: fixture
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
`, fixture)

	b.Run("inprocess", func(b *testing.B) {
		ctx := context.Background()
		h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
		defer h.Shutdown(context.Background())
		c, err := host.ParseComposition("bench.yml", []byte(composition+"  - {id: gateway, name: gateway}\n"), nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Update(ctx, c); err != nil {
			b.Fatal(err)
		}
		g, ok := host.Lookup(h, Key)
		if !ok {
			b.Fatalf("no gateway service: %v", h.Status())
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := g.Server().Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Wait()
		gw := benchClient(b, ct)
		defer gw.Close()
		sideBySide(b, benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixture)}), gw, "mcp__fx__ping", nil)
	})

	b.Run("stdio", func(b *testing.B) {
		bin := dshHostBinary(b)
		file := filepath.Join(b.TempDir(), "composition.yml")
		if err := os.WriteFile(file, []byte(composition), 0o644); err != nil {
			b.Fatal(err)
		}
		gw := benchClient(b, &mcp.CommandTransport{Command: exec.Command(bin, "serve", "--stdio", "--log-level", "warn", "-c", file)})
		defer gw.Close()
		proxy := benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixture, "-proxy-of", fixture)})
		defer proxy.Close()
		sideBySide(b, benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixture)}), gw, "mcp__fx__ping", proxy)
	})
}

func benchClient(b *testing.B, tr mcp.Transport) *mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// sideBySide calls ping on direct, gatewayTool on gw and, when proxy is
// not nil, ping on proxy, once each per iteration, and reports their
// latencies and ratios.
func sideBySide(b *testing.B, direct, gw *mcp.ClientSession, gatewayTool string, proxy *mcp.ClientSession) {
	defer direct.Close()
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, name string) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "pong" {
			b.Fatalf("%s: unexpected result (isError %v) %q", name, res.IsError, mcptest.Texts(res))
		}
		return d
	}
	names := []string{"direct", "gateway"}
	paths := []func() time.Duration{
		func() time.Duration { return call(direct, "ping") },
		func() time.Duration { return call(gw, gatewayTool) },
	}
	if proxy != nil {
		names = append(names, "proxy")
		paths = append(paths, func() time.Duration { return call(proxy, "ping") })
	}
	samples := mcptest.Rotated(b, 20, paths...)
	sums := make([]time.Duration, len(paths))
	p50 := make([]time.Duration, len(paths))
	n := float64(b.N)
	for i, name := range names {
		for _, d := range samples[i] {
			sums[i] += d
		}
		// The medians too: a loaded machine's outliers move the means.
		p50[i] = mcptest.Percentile(samples[i], 50)
		b.ReportMetric(float64(sums[i].Microseconds())/n, name+"-µs/call")
		b.ReportMetric(float64(p50[i].Microseconds()), name+"-p50-µs")
	}
	b.ReportMetric(float64(sums[1])/float64(sums[0]), "gateway/direct")
	b.ReportMetric(float64(p50[1])/float64(p50[0]), "p50-gateway/direct")
	if proxy != nil {
		b.ReportMetric(float64(p50[2])/float64(p50[0]), "p50-proxy/direct")
		b.ReportMetric(float64(p50[1])/float64(p50[2]), "p50-gateway/proxy")
	}
}
