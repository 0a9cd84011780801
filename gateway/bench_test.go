package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/mcptest"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// BenchmarkGatewayVsDirect measures one trivial tool call (the fixture's
// ping) made by a go-sdk client through the gateway (client → gateway →
// registry pipeline → mcp-client → fixture server over stdio) against the
// same client calling the fixture server directly over stdio. Each
// iteration makes one call of each kind, interleaved, so that both see the
// same machine load; the result is reported as direct-µs/call,
// gateway-µs/call and gateway/direct.
//
//   - inprocess: the client reaches an in-process gateway (a `gateway`
//     instance of the composition) over go-sdk's in-memory transport: the
//     cost of the gateway and the pipeline alone.
//   - stdio: the client starts `dsh-host serve --stdio`, as Claude Code or
//     Codex would: the deployment's cost, one more stdio hop included.
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
		sideBySide(b, gw, "mcp__fx__ping", benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixture)}))
	})

	b.Run("stdio", func(b *testing.B) {
		bin := dshHostBinary(b)
		file := filepath.Join(b.TempDir(), "composition.yml")
		if err := os.WriteFile(file, []byte(composition), 0o644); err != nil {
			b.Fatal(err)
		}
		gw := benchClient(b, &mcp.CommandTransport{Command: exec.Command(bin, "serve", "--stdio", "--log-level", "warn", "-c", file)})
		defer gw.Close()
		sideBySide(b, gw, "mcp__fx__ping", benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixture)}))
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

// sideBySide calls gatewayTool on gw and ping on direct, once each per
// iteration, and reports both latencies and their ratio.
func sideBySide(b *testing.B, gw *mcp.ClientSession, gatewayTool string, direct *mcp.ClientSession) {
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
	// Warm both paths (connections, schema caches) outside the timing.
	for range 20 {
		call(direct, "ping")
		call(gw, gatewayTool)
	}
	var dDirect, dGateway time.Duration
	var direct50, gateway50 []time.Duration
	b.ResetTimer()
	for b.Loop() {
		d, g := call(direct, "ping"), call(gw, gatewayTool)
		dDirect += d
		dGateway += g
		direct50, gateway50 = append(direct50, d), append(gateway50, g)
	}
	n := float64(b.N)
	b.ReportMetric(float64(dDirect.Microseconds())/n, "direct-µs/call")
	b.ReportMetric(float64(dGateway.Microseconds())/n, "gateway-µs/call")
	b.ReportMetric(float64(dGateway)/float64(dDirect), "gateway/direct")
	// The medians: a loaded machine's outliers move the means.
	slices.Sort(direct50)
	slices.Sort(gateway50)
	p50d, p50g := direct50[len(direct50)/2], gateway50[len(gateway50)/2]
	b.ReportMetric(float64(p50d.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(p50g.Microseconds()), "gateway-p50-µs")
	b.ReportMetric(float64(p50g)/float64(p50d), "p50-gateway/direct")
}
