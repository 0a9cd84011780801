package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
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
//     only selects on it), so a gap there is the machine's noise;
//   - direct-caps: a bare session that declares what mcp-client declares
//     (elicitation in form and URL mode, sampling with tools). On the
//     2026-07-28 revision every request carries the client's capabilities
//     in its _meta, and the server reads them: this path costs what the
//     protocol costs for those capabilities, not what the host adds;
//   - direct-meta: the direct-caps session sending what mcp-client puts in
//     every tools/call's _meta: a progress token (each progress
//     notification restarts toolCallTimeoutMs) and, on 2026-07-28 to a
//     server that logs, the log level. go-sdk's server decodes the level
//     through a JSON round trip with a fresh 32 KiB buffer, so these keys
//     cost both sides, bare session or host: host against this path is
//     the host's own code;
//   - direct-meta-again: the same as direct-meta, on a process of its
//     own. Two paths that do the same work differ by this much in a run:
//     noise-p50-% is its median over direct-meta's, the noise an overhead
//     figure of the same run carries.
//
// It reports the median and p99 of each path in microseconds, the host's
// overhead on the direct, direct-caps and direct-meta medians in percent,
// and noise-p50-%.
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
				var direct, directTimeout, directCaps, directMeta, directMetaAgain *mcp.ClientSession
				switch transport {
				case "stdio":
					entry = stdioFixture(b, "fx", "fx", nil)
					direct = mcptest.ConnectFixture(b)
					directTimeout = mcptest.ConnectFixture(b)
					directCaps = mcptest.Connect(b, &mcp.CommandTransport{Command: exec.Command(mcptest.FixtureBinary(b)), TerminateDuration: time.Second}, hostLikeClient())
					directMeta = mcptest.Connect(b, &mcp.CommandTransport{Command: exec.Command(mcptest.FixtureBinary(b)), TerminateDuration: time.Second}, hostLikeClient())
					directMetaAgain = mcptest.Connect(b, &mcp.CommandTransport{Command: exec.Command(mcptest.FixtureBinary(b)), TerminateDuration: time.Second}, hostLikeClient())
				case "http":
					entry = host.Entry{ID: "fx", Name: "mcp-client", Config: map[string]any{
						"transport": "streamable-http", "serverName": "fx", "url": mcptest.StartHTTPFixture(b),
					}}
					direct = connectDirectHTTP(b, nil)
					directTimeout = connectDirectHTTP(b, nil)
					directCaps = connectDirectHTTP(b, hostLikeClient())
					directMeta = connectDirectHTTP(b, hostLikeClient())
					directMetaAgain = connectDirectHTTP(b, hostLikeClient())
				}
				hs.apply(entry)
				reg := hs.registry()
				name := mcpclient.PublicToolName("fx", c.tool)
				args, err := json.Marshal(c.args)
				if err != nil {
					b.Fatal(err)
				}
				// Every call gets params of its own, made before its clock
				// starts: go-sdk writes the client's capabilities into a
				// 2026-07-28 request's _meta and keeps what is there, so
				// shared params would carry the first session's and spare
				// the others that work.
				fresh := func() *mcp.CallToolParams { return &mcp.CallToolParams{Name: c.tool, Arguments: c.args} }
				ctx := b.Context()
				metaCalls := 0
				withMeta := func(cs *mcp.ClientSession) func() *mcp.CallToolParams {
					return func() *mcp.CallToolParams {
						metaCalls++
						p := fresh()
						p.SetProgressToken("dsh-" + strconv.Itoa(metaCalls))
						if res := cs.InitializeResult(); res.Capabilities.Logging != nil && res.ProtocolVersion >= "2026-07-28" {
							p.GetMeta()[mcp.MetaKeyLogLevel] = "info"
						}
						return p
					}
				}

				// bare times one call on a bare session, with params made
				// before the clock starts and, when bound is set, a context
				// of its own, cancelled on return.
				bare := func(cs *mcp.ClientSession, params func() *mcp.CallToolParams, bound func(context.Context) (context.Context, context.CancelFunc)) func() time.Duration {
					return func() time.Duration {
						p := params()
						start := time.Now()
						cctx, cancel := ctx, context.CancelFunc(func() {})
						if bound != nil {
							cctx, cancel = bound(ctx)
						}
						res, err := cs.CallTool(cctx, p)
						cancel()
						d := time.Since(start)
						if err != nil || res.IsError {
							b.Fatalf("bare session call: %v %+v", err, res)
						}
						return d
					}
				}
				paths := []func() time.Duration{ // in latencyPaths' order
					func() time.Duration { // host
						start := time.Now()
						res := reg.Execute(ctx, modelCaller, name, args)
						d := time.Since(start)
						if res.Err != nil {
							b.Fatalf("host call: %v", res.Err)
						}
						return d
					},
					bare(direct, fresh, nil),
					bare(directTimeout, fresh, func(ctx context.Context) (context.Context, context.CancelFunc) {
						return context.WithTimeout(ctx, time.Minute)
					}),
					bare(directCaps, fresh, nil),
					bare(directMeta, withMeta(directMeta), nil),
					bare(directMetaAgain, withMeta(directMetaAgain), nil),
				}
				reportLatency(b, mcptest.Rotated(b, 50, paths...))
			})
		}
	}
}

func connectDirectHTTP(b *testing.B, opts *mcp.ClientOptions) *mcp.ClientSession {
	b.Helper()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	b.Cleanup(client.CloseIdleConnections)
	return mcptest.Connect(b, &mcp.StreamableClientTransport{Endpoint: mcptest.StartHTTPFixture(b), HTTPClient: client}, opts)
}

// hostLikeClient declares what mcp-client declares, with handlers that
// are never called.
func hostLikeClient() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked in a benchmark")
		},
		CreateMessageWithToolsHandler: func(context.Context, *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return nil, errors.New("not asked in a benchmark")
		},
	}
}

// reportLatency reports the median and p99 of each path (samples in the
// order of latencyPaths) in microseconds, and the host's overhead on each
// direct path's median in percent.
func reportLatency(b *testing.B, samples [][]time.Duration) {
	if len(samples[0]) == 0 {
		return
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	p50s := map[string]float64{}
	for i, name := range latencyPaths {
		p50s[name] = us(mcptest.Percentile(samples[i], 50))
		b.ReportMetric(p50s[name], name+"-p50-µs")
		b.ReportMetric(us(mcptest.Percentile(samples[i], 99)), name+"-p99-µs")
	}
	over := func(a, base string) float64 { return 100 * (p50s[a] - p50s[base]) / p50s[base] }
	for _, base := range []string{"direct", "direct-caps", "direct-meta"} {
		b.ReportMetric(over("host", base), "overhead"+strings.TrimPrefix(base, "direct")+"-p50-%")
	}
	b.ReportMetric(over("direct-meta-again", "direct-meta"), "noise-p50-%")
}

// latencyPaths names BenchmarkCallOverhead's paths, in order.
var latencyPaths = []string{"host", "direct", "direct-timeout", "direct-caps", "direct-meta", "direct-meta-again"}
