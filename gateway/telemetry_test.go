package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// observedHost is a host in this process, tracing with tp (nil: off),
// running the fixture server (serverName fx, with the meta tool) under
// mcp-client and a gateway with an HTTP listener and, when metrics is
// set, a metrics listener.
type observedHost struct {
	mcpURL, metricsURL string
	hc                 *http.Client
}

func startObservedHost(t testing.TB, tp trace.TracerProvider, metrics bool) *observedHost {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler), Metrics: telemetry.NewRegistry(), Tracing: tp})
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	metricsKey := ""
	if metrics {
		metricsKey = `, metrics: "127.0.0.1:0"`
	}
	composition := fmt.Sprintf(`plugins:
  - id: fixture
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q, args: [-echo-meta]}
  - {id: gateway, name: gateway, config: {http: "127.0.0.1:0"%s}}
`, mcptest.FixtureBinary(t), metricsKey)
	c, err := host.ParseComposition("observed.yml", []byte(composition), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	st := host.Find(h.Status(), "gateway")
	mcpURL, metricsURL, ok := strings.Cut(st.Detail, "; metrics at ")
	if st.State != host.StateActive || ok != (metricsKey != "") {
		t.Fatalf("gateway not serving MCP and metrics: %+v", h.Status())
	}
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return &observedHost{mcpURL: mcpURL, metricsURL: metricsURL, hc: hc}
}

func (o *observedHost) connect(t testing.TB) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: o.mcpURL, HTTPClient: o.hc}, nil)
}

// TestTraceContextCrossesTheGateway: a client's traceparent in a
// tools/call's _meta yields spans of that trace in the gateway (server),
// the registry (execute_tool) and mcp-client (client), each the child of
// the one before, and the MCP server receives the trace context of
// mcp-client's span in its request's _meta, tracestate included; a
// prompts/get carries the gateway span's context to the server too.
func TestTraceContextCrossesTheGateway(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	o := startObservedHost(t, tp, true)
	cs := o.connect(t)

	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__meta",
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01", "tracestate": "vendor=opaque"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, mcptest.Texts(res))
	}
	var upstream map[string]any
	if err := json.Unmarshal([]byte(mcptest.Texts(res)[0]), &upstream); err != nil {
		t.Fatalf("the fixture's _meta: %v", err)
	}

	spans := map[string]tracetest.SpanStub{}
	for _, s := range exporter.GetSpans() {
		spans[s.Name] = s
	}
	server, execute, client := spans["tools/call mcp__fx__meta"], spans["execute_tool mcp__fx__meta"], spans["tools/call meta"]
	type link struct {
		Kind           trace.SpanKind
		Trace, Parent  string
		Remote         bool
		Tool, Server   string
		Method, Status string
		Session        bool // an mcp.session.id
	}
	linkOf := func(s tracetest.SpanStub) link {
		l := link{Kind: s.SpanKind, Trace: s.SpanContext.TraceID().String(), Parent: s.Parent.SpanID().String(), Remote: s.Parent.IsRemote(), Status: s.Status.Code.String()}
		for _, a := range s.Attributes {
			switch a.Key {
			case "gen_ai.tool.name":
				l.Tool = a.Value.AsString()
			case telemetry.AttrServerName:
				l.Server = a.Value.AsString()
			case "mcp.method.name":
				l.Method = a.Value.AsString()
			case "mcp.session.id":
				l.Session = a.Value.AsString() != ""
			}
		}
		return l
	}
	got := []link{linkOf(server), linkOf(execute), linkOf(client)}
	want := []link{
		{Kind: trace.SpanKindServer, Trace: traceID, Parent: clientSpan, Remote: true, Tool: "mcp__fx__meta", Method: "tools/call", Status: "Unset", Session: true},
		{Kind: trace.SpanKindInternal, Trace: traceID, Parent: server.SpanContext.SpanID().String(), Tool: "mcp__fx__meta", Server: "fx", Status: "Unset"},
		{Kind: trace.SpanKindClient, Trace: traceID, Parent: execute.SpanContext.SpanID().String(), Tool: "meta", Server: "fx", Method: "tools/call", Status: "Unset"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s\nall: %v", diff, exporter.GetSpans().Snapshots())
	}
	wantUpstream := map[string]any{
		"traceparent": "00-" + traceID + "-" + client.SpanContext.SpanID().String() + "-01",
		"tracestate":  "vendor=opaque",
	}
	for k, v := range wantUpstream {
		if upstream[k] != v {
			t.Errorf("the server's _meta[%s] = %v, want %v (all: %v)", k, upstream[k], v, upstream)
		}
	}

	// Other requests carry the trace context too: a prompts/get reaches
	// the server with the gateway's span as the parent.
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__fx__meta",
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"}})
	if err != nil || len(prompt.Messages) != 1 {
		t.Fatalf("prompts/get: %v %+v", err, prompt)
	}
	text, _ := prompt.Messages[0].Content.(*mcp.TextContent)
	var promptMeta map[string]any
	if text == nil || json.Unmarshal([]byte(text.Text), &promptMeta) != nil {
		t.Fatalf("the prompt's message: %+v", prompt.Messages[0].Content)
	}
	var promptSpan string
	for _, s := range exporter.GetSpans() {
		if s.Name == "prompts/get mcp__fx__meta" {
			promptSpan = s.SpanContext.SpanID().String()
		}
	}
	if want := "00-" + traceID + "-" + promptSpan + "-01"; promptMeta["traceparent"] != want {
		t.Errorf("the server's prompts/get _meta = %v, want traceparent %s", promptMeta, want)
	}
}

// TestMetricsCountCallsAndErrors scrapes /metrics over HTTP: the counters
// of calls, errors and the latency histogram move with a gateway client's
// calls, the gateway's sessions and the server's state are there, and
// promtool (when installed; under CI it must be) accepts the scrape.
func TestMetricsCountCallsAndErrors(t *testing.T) {
	o := startObservedHost(t, nil, true)
	cs := o.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, name := range []string{"mcp__fx__ping", "mcp__fx__ping", "mcp__fx__fail"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name}); err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
	}
	body := o.scrape(t)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, body)
	}
	value := func(name string, labels map[string]string) float64 {
		f := families[name]
		if f == nil {
			return -1
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		return -1
	}
	type check struct {
		name   string
		labels map[string]string
	}
	got := map[string]float64{}
	for key, c := range map[string]check{
		"ping ok":            {"dsh_tool_calls_total", map[string]string{"server": "fx", "tool": "mcp__fx__ping", "outcome": "ok"}},
		"ping latency":       {"dsh_tool_call_duration_seconds", map[string]string{"server": "fx", "tool": "mcp__fx__ping", "outcome": "ok"}},
		"fail tool_error":    {"dsh_tool_calls_total", map[string]string{"server": "fx", "tool": "mcp__fx__fail", "outcome": "tool_error"}},
		"fail errors":        {"dsh_tool_call_errors_total", map[string]string{"server": "fx", "tool": "mcp__fx__fail", "error_type": "tool_error"}},
		"ping errors":        {"dsh_tool_call_errors_total", map[string]string{"tool": "mcp__fx__ping"}},
		"fx up":              {"dsh_upstream_up", map[string]string{"server": "fx"}},
		"sessions":           {"dsh_gateway_sessions", map[string]string{"entry": "gateway"}},
		"connections > 0":    {"dsh_gateway_connections", map[string]string{"entry": "gateway"}},
		"requests in flight": {"dsh_gateway_requests_in_flight", map[string]string{"entry": "gateway"}},
		"held answer bytes":  {"dsh_gateway_held_answer_bytes", map[string]string{"entry": "gateway"}},
		"panics":             {"dsh_panics_total", map[string]string{"entry": "gateway", "where": "gateway"}},
	} {
		got[key] = value(c.name, c.labels)
	}
	if got["connections > 0"] > 0 {
		got["connections > 0"] = 1
	}
	want := map[string]float64{
		"ping ok": 2, "ping latency": 2, "fail tool_error": 1, "fail errors": 1, "ping errors": -1,
		"fx up": 1, "sessions": 1, "connections > 0": 1, "requests in flight": 0, "held answer bytes": 0, "panics": 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got; -1: no such series):\n%s\n%s", diff, body)
	}
	promtoolCheck(t, body)
}

// scrape GETs /metrics.
func (o *observedHost) scrape(t *testing.T) string {
	t.Helper()
	resp, err := o.hc.Get(o.metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", o.metricsURL, resp.StatusCode, err, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want Prometheus text", ct)
	}
	return string(b)
}

// promtoolCheck runs `promtool check metrics` on a scrape. Without
// promtool on PATH the check is skipped, except under CI, which installs
// it (Debian's prometheus package).
func promtoolCheck(t *testing.T, body string) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool is not on PATH: `promtool check metrics` not run (apt-get install prometheus)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Log(msg)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\n--- the scrape:\n%s", err, out, body)
	}
}

// BenchmarkGatewayTelemetry measures one ping through the gateway (client →
// gateway → registry → mcp-client → fixture over stdio) with telemetry off,
// with metrics, and with metrics and tracing (the SDK, every span sampled
// and ended, none exported), side by side in one run (mcptest.Rotated):
// each iteration makes one call on each, in rotating order, and the medians
// and 90th percentiles are reported.
//
//	go test -run '^$' -bench GatewayTelemetry -benchtime 2000x ./gateway
func BenchmarkGatewayTelemetry(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(endOnly{}))
	b.Cleanup(func() { sdk.Shutdown(context.Background()) })
	variants := []struct {
		name    string
		tp      trace.TracerProvider
		metrics bool
	}{
		{"off", nil, false},
		{"metrics", nil, true},
		{"tracing+metrics", sdk, true},
	}
	ctx := context.Background()
	paths := make([]func() time.Duration, len(variants))
	for i, v := range variants {
		cs := startObservedHost(b, v.tp, v.metrics).connect(b)
		paths[i] = func() time.Duration {
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ping",
				Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %v", v.name, err, mcptest.Texts(res))
			}
			return time.Since(start)
		}
	}
	samples := mcptest.Rotated(b, 50, paths...)
	for i, v := range variants {
		b.ReportMetric(float64(mcptest.Percentile(samples[i], 50).Microseconds()), v.name+"-p50-µs/call")
		b.ReportMetric(float64(mcptest.Percentile(samples[i], 90).Microseconds()), v.name+"-p90-µs/call")
	}
}

// endOnly is a span processor that keeps nothing: the spans are made,
// sampled and ended as with an exporter, without the export.
type endOnly struct{}

func (endOnly) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (endOnly) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (endOnly) Shutdown(context.Context) error                  { return nil }
func (endOnly) ForceFlush(context.Context) error                { return nil }

// TestServerSpanAttributes: the gateway's server spans carry what OTel's
// MCP conventions ask: the transport (tcp, http, the listener's address
// and port), and for a request answered with a JSON-RPC error its code in
// error.type and rpc.response.status_code (an unknown tool: -32602).
func TestServerSpanAttributes(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	o := startObservedHost(t, tp, false)
	cs := o.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ping"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	u, err := url.Parse(o.mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	attrs := func(name string) map[string]string {
		for _, s := range exporter.GetSpans() {
			if s.Name == name && s.SpanKind == trace.SpanKindServer {
				m := map[string]string{}
				for _, a := range s.Attributes {
					switch a.Key {
					case "network.transport", "network.protocol.name", "server.address", "server.port", "error.type", "rpc.response.status_code":
						m[string(a.Key)] = a.Value.Emit()
					}
				}
				return m
			}
		}
		t.Fatalf("no server span %q among %v", name, exporter.GetSpans().Snapshots())
		return nil
	}
	network := map[string]string{"network.transport": "tcp", "network.protocol.name": "http", "server.address": u.Hostname(), "server.port": u.Port()}
	if diff := cmp.Diff(network, attrs("tools/call mcp__fx__ping")); diff != "" {
		t.Errorf("a call's span (-want +got):\n%s", diff)
	}
	failed := map[string]string{"error.type": "-32602", "rpc.response.status_code": "-32602"}
	for k, v := range network {
		failed[k] = v
	}
	if diff := cmp.Diff(failed, attrs("tools/call no_such_tool")); diff != "" {
		t.Errorf("an unknown tool's span (-want +got):\n%s", diff)
	}
}

// TestStdioServerSpanAttributes: a session a front end serves over stdio
// (serve --stdio; here in memory, as go-sdk gives it no HTTP headers) has
// server spans with network.transport pipe and no HTTP attributes.
func TestStdioServerSpanAttributes(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "stdio", nil)
	t.Cleanup(func() { s.Dispose(time.Second) })
	g, err := New(s, reg, nil, &Deps{Tracer: tp.Tracer("t")})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectWith(t, g, nil, "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "absent"}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	got := map[string]string{}
	for _, sp := range exporter.GetSpans() {
		if sp.Name == "tools/call absent" {
			for _, a := range sp.Attributes {
				switch a.Key {
				case "network.transport", "network.protocol.name", "server.address", "error.type", "rpc.response.status_code":
					got[string(a.Key)] = a.Value.Emit()
				}
			}
		}
	}
	want := map[string]string{"network.transport": "pipe", "error.type": "-32602", "rpc.response.status_code": "-32602"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the span (-want +got):\n%s", diff)
	}
}
