package mcpclient_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// BenchmarkCallOverhead measures what the host adds to a trivial tool call:
// each iteration makes one call through the host (Registry.Execute →
// mcp-client → server) and one call with a bare go-sdk ClientSession on a
// second process of the same fixture server, alternating which goes first,
// so that both see the same machine at the same moment. It reports the
// median and p99 latency of each path and the host's overhead on the median
// in percent (target: ≤ 5).
//
//	go test -run '^$' -bench CallOverhead -benchtime 2000x ./plugins/mcpclient
func BenchmarkCallOverhead(b *testing.B) {
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"ping", map[string]any{}},
		{"add", map[string]any{"a": 2, "b": 3}},
	}
	for _, transport := range []string{"stdio", "http"} {
		for _, c := range calls {
			b.Run(transport+"/"+c.tool, func(b *testing.B) {
				// A host as it runs in production: info-level logs.
				hs := newHarnessLogging(b, slog.LevelInfo)
				var (
					entry  host.Entry
					direct *mcp.ClientSession
				)
				switch transport {
				case "stdio":
					entry = stdioFixture(b, "fx", "fx", nil)
					direct = connectDirect(b, &mcp.CommandTransport{Command: exec.Command(mcptest.FixtureBinary(b)), TerminateDuration: time.Second})
				case "http":
					entry = host.Entry{ID: "fx", Name: "mcp-client", Config: map[string]any{
						"transport": "streamable-http", "serverName": "fx", "url": mcptest.StartHTTPFixture(b),
					}}
					client := &http.Client{}
					b.Cleanup(client.CloseIdleConnections)
					direct = connectDirect(b, &mcp.StreamableClientTransport{Endpoint: mcptest.StartHTTPFixture(b), HTTPClient: client})
				}
				hs.apply(entry)
				reg := hs.registry()
				name := mcpclient.PublicToolName("fx", c.tool)
				args, err := json.Marshal(c.args)
				if err != nil {
					b.Fatal(err)
				}
				params := &mcp.CallToolParams{Name: c.tool, Arguments: c.args}
				ctx := b.Context()

				viaHost := func() time.Duration {
					start := time.Now()
					res := reg.Execute(ctx, modelCaller, name, args)
					d := time.Since(start)
					if res.Err != nil {
						b.Fatalf("host call: %v", res.Err)
					}
					return d
				}
				viaSDK := func() time.Duration {
					start := time.Now()
					res, err := direct.CallTool(ctx, params)
					d := time.Since(start)
					if err != nil || res.IsError {
						b.Fatalf("direct call: %v %+v", err, res)
					}
					return d
				}
				// Warm both paths (connections, schema caches) before measuring.
				for range 50 {
					viaHost()
					viaSDK()
				}

				var hostD, directD []time.Duration
				i := 0
				b.ResetTimer()
				for b.Loop() {
					if i%2 == 0 {
						hostD = append(hostD, viaHost())
						directD = append(directD, viaSDK())
					} else {
						directD = append(directD, viaSDK())
						hostD = append(hostD, viaHost())
					}
					i++
				}
				b.StopTimer()
				reportLatency(b, hostD, directD)
			})
		}
	}
}

func connectDirect(b *testing.B, tr mcp.Transport) *mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), e2eWait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		b.Fatalf("direct connect: %v", err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// reportLatency reports the median and p99 of both paths in microseconds
// and the host's overhead on the median in percent.
func reportLatency(b *testing.B, hostD, directD []time.Duration) {
	if len(hostD) == 0 {
		return
	}
	hp50, hp99 := percentile(hostD, 50), percentile(hostD, 99)
	dp50, dp99 := percentile(directD, 50), percentile(directD, 99)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(hp50), "host-p50-µs")
	b.ReportMetric(us(hp99), "host-p99-µs")
	b.ReportMetric(us(dp50), "direct-p50-µs")
	b.ReportMetric(us(dp99), "direct-p99-µs")
	b.ReportMetric(100*(us(hp50)-us(dp50))/us(dp50), "overhead-p50-%")
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}
