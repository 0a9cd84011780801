package mcpclient_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// BenchmarkCallOverhead measures what the host adds to a trivial tool call.
// Each iteration makes one call on each of three paths, each with its own
// process of the same fixture server, in rotating order so that all see the
// same machine at the same moment:
//
//   - host: Registry.Execute → mcp-client → server;
//   - direct: a bare go-sdk ClientSession.CallTool;
//   - direct-timeout: the same with a per-call context.WithTimeout cancelled
//     on return, as any client that bounds its calls does (mcp-client does,
//     for toolCallTimeoutMs): over Streamable HTTP that cancel costs
//     connections, and this path shows how much. Over stdio the context
//     itself costs five allocations and well under a microsecond (go-sdk
//     only selects on it), so a gap there is the machine's noise.
//
// It reports the median and p99 of each path in microseconds and the
// host's overhead on the direct median in percent (target: ≤ 5).
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
				var entry host.Entry
				var direct, directTimeout *mcp.ClientSession
				switch transport {
				case "stdio":
					entry = stdioFixture(b, "fx", "fx", nil)
					direct = mcptest.ConnectFixture(b)
					directTimeout = mcptest.ConnectFixture(b)
				case "http":
					entry = host.Entry{ID: "fx", Name: "mcp-client", Config: map[string]any{
						"transport": "streamable-http", "serverName": "fx", "url": mcptest.StartHTTPFixture(b),
					}}
					direct = connectDirectHTTP(b)
					directTimeout = connectDirectHTTP(b)
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

				paths := []func() time.Duration{
					func() time.Duration { // host
						start := time.Now()
						res := reg.Execute(ctx, modelCaller, name, args)
						d := time.Since(start)
						if res.Err != nil {
							b.Fatalf("host call: %v", res.Err)
						}
						return d
					},
					func() time.Duration { // direct
						start := time.Now()
						res, err := direct.CallTool(ctx, params)
						d := time.Since(start)
						if err != nil || res.IsError {
							b.Fatalf("direct call: %v %+v", err, res)
						}
						return d
					},
					func() time.Duration { // direct-timeout
						start := time.Now()
						cctx, cancel := context.WithTimeout(ctx, time.Minute)
						res, err := directTimeout.CallTool(cctx, params)
						cancel()
						d := time.Since(start)
						if err != nil || res.IsError {
							b.Fatalf("direct call with a timeout: %v %+v", err, res)
						}
						return d
					},
				}
				// Warm every path (connections, schema caches) first.
				for range 50 {
					for _, p := range paths {
						p()
					}
				}

				samples := make([][]time.Duration, len(paths))
				i := 0
				b.ResetTimer()
				for b.Loop() {
					for k := range paths {
						j := (i + k) % len(paths)
						samples[j] = append(samples[j], paths[j]())
					}
					i++
				}
				b.StopTimer()
				reportLatency(b, samples[0], samples[1], samples[2])
			})
		}
	}
}

func connectDirectHTTP(b *testing.B) *mcp.ClientSession {
	b.Helper()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	b.Cleanup(client.CloseIdleConnections)
	return mcptest.Connect(b, &mcp.StreamableClientTransport{Endpoint: mcptest.StartHTTPFixture(b), HTTPClient: client}, nil)
}

// reportLatency reports the median and p99 of each path in microseconds
// and the host's overhead on the direct median in percent.
func reportLatency(b *testing.B, hostD, directD, timeoutD []time.Duration) {
	if len(hostD) == 0 {
		return
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for _, p := range []struct {
		name string
		ds   []time.Duration
	}{{"host", hostD}, {"direct", directD}, {"direct-timeout", timeoutD}} {
		b.ReportMetric(us(percentile(p.ds, 50)), p.name+"-p50-µs")
		b.ReportMetric(us(percentile(p.ds, 99)), p.name+"-p99-µs")
	}
	hp50, dp50 := us(percentile(hostD, 50)), us(percentile(directD, 50))
	b.ReportMetric(100*(hp50-dp50)/dp50, "overhead-p50-%")
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
