package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// tracedGateway is a gateway on reg with tracing (into the returned
// exporter) and metrics on, logging into log.
func tracedGateway(t *testing.T, reg *tools.Registry, log io.Writer) (*Gateway, *tracetest.InMemoryExporter, prometheus.Gatherer) {
	t.Helper()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	pr := prometheus.NewRegistry()
	m, err := NewMetrics(pr)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(scope(t), reg, nil, &Deps{Tracer: tp.Tracer("test"), Metrics: m, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return g, exporter, pr
}

// TestTracedFailedCallsAnswered: with tracing on, a tools/call that ends
// in a JSON-RPC error (an unknown tool, no name) is answered with that
// error, its span says so, and the gateway goes on serving: reading
// IsError of the failed call's nil result used to end the process.
func TestTracedFailedCallsAnswered(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("echo"))
	g, exporter, m := tracedGateway(t, reg, io.Discard)
	cs := connectClient(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, name := range []string{"no_such_tool", ""} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name}); err == nil {
			t.Errorf("tools/call %q: no error", name)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || mcptest.Texts(res)[0] != "still here" {
		t.Fatalf("a call after them: %v %v", err, mcptest.Texts(res))
	}
	failed := 0
	for _, s := range exporter.GetSpans() {
		if strings.HasPrefix(s.Name, "tools/call") && s.Status.Code.String() == "Error" {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("%d failed tools/call spans, want 2: %v", failed, exporter.GetSpans())
	}
	if n := panics(t, m, telemetry.PanicGateway); n != 0 {
		t.Errorf("dsh_panics_total{where=gateway} = %v, want 0", n)
	}
}

// panics reads dsh_panics_total{where} from m.
func panics(t *testing.T, g prometheus.Gatherer, where string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "dsh_panics_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "where" && l.GetValue() == where {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no dsh_panics_total{where=%q} in the metrics", where)
	return 0
}

// explosive is a tool's value whose relay panics in the gateway, outside
// the registry's own recover: a plugin's bug.
type explosive struct{}

func (explosive) MCPCallToolResult() *mcp.CallToolResult { panic("explosive: a plugin's bug") }
func (explosive) MCPContent() []json.RawMessage          { return nil }
func (explosive) MCPStructuredContent() json.RawMessage  { return nil }

// TestPanicAnsweredNotFatal: a panic while serving a tools/call (here in
// relaying a plugin's value) answers that call with an internal error,
// is logged once with its stack and counted, and the gateway goes on
// serving the same session, over a stdio-like stream and over HTTP.
func TestPanicAnsweredNotFatal(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			reg := tools.New(nil)
			register(t, reg, echo("echo"))
			register(t, reg, tools.Definition{Name: "boom", Execute: func(context.Context, tools.Call) (tools.Output, error) {
				return tools.Output{Value: explosive{}}, nil
			}})
			log := &mcptest.SyncBuffer{}
			g, _, m := tracedGateway(t, reg, log)
			var cs *mcp.ClientSession
			if transport == "stdio" {
				cs = connectPipes(t, g)
			} else {
				srv := httptest.NewServer(g.HTTPHandler(""))
				t.Cleanup(srv.Close)
				hc := &http.Client{Transport: &http.Transport{}}
				t.Cleanup(hc.CloseIdleConnections)
				cs = mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "boom"})
			if err == nil || !strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "explosive") {
				t.Errorf("the panicking call: %v, want an internal error without the panic's text", err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "alive"}})
			if err != nil || mcptest.Texts(res)[0] != "alive" {
				t.Fatalf("the next call on the session: %v %v", err, mcptest.Texts(res))
			}
			if lines := linesWith(log, "panic while serving"); len(lines) != 1 || !strings.Contains(lines[0], "stack=") || !strings.Contains(lines[0], "explosive") {
				t.Errorf("log lines of the panic: %q, want one with its value and stack", lines)
			}
			if n := panics(t, m, telemetry.PanicGateway); n != 1 {
				t.Errorf("dsh_panics_total{where=gateway} = %v, want 1", n)
			}
		})
	}
}

// connectPipes connects a go-sdk client to g over a pair of pipes, the
// newline-delimited JSON-RPC stream dsh-host serve --stdio speaks.
func connectPipes(t *testing.T, g *Gateway) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ss, err := g.Server().Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Close()
		ss.Wait()
	})
	return cs
}

// TestToolPanicCounted: a tool's own panic is the registry's to recover
// (an isError answer, logged there with its stack) and is counted as
// where="tool".
func TestToolPanicCounted(t *testing.T) {
	// The registry and the gateway count into registries of their own,
	// as each run does on a host.
	toolsReg, gwReg := prometheus.NewRegistry(), prometheus.NewRegistry()
	tm, err := tools.NewMetrics(toolsReg)
	if err != nil {
		t.Fatal(err)
	}
	gm, err := NewMetrics(gwReg)
	if err != nil {
		t.Fatal(err)
	}
	log := &mcptest.SyncBuffer{}
	reg := tools.New(&tools.Options{Metrics: tm, Logger: slog.New(slog.NewTextHandler(log, nil))})
	register(t, reg, tools.Definition{Name: "boom", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		panic("a tool's bug")
	}})
	g, err := New(scope(t), reg, nil, &Deps{Metrics: gm})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectPipes(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "boom"})
	if err != nil || !res.IsError || !strings.Contains(mcptest.Texts(res)[0], "panicked") {
		t.Errorf("the panicking tool: %v %v, want isError saying it panicked", err, mcptest.Texts(res))
	}
	if lines := linesWith(log, "tool panicked"); len(lines) != 1 || !strings.Contains(lines[0], "stack=") {
		t.Errorf("log lines: %q, want one with the stack", lines)
	}
	if n := panics(t, prometheus.Gatherers{toolsReg, gwReg}, telemetry.PanicTool); n != 1 {
		t.Errorf("dsh_panics_total{where=tool} = %v, want 1", n)
	}
}

// TestHTTPPanicAnswered500: a panic in the gateway's HTTP handling before
// any of the answer went out is answered 500, logged once with its stack
// and counted as where="http"; the listener goes on serving.
func TestHTTPPanicAnswered500(t *testing.T) {
	log := &mcptest.SyncBuffer{}
	g, _, m := tracedGateway(t, tools.New(nil), log)
	mux := http.NewServeMux()
	g.healthHandlers(mux, func() (bool, string) { panic("readiness: a bug") })
	srv := httptest.NewServer(g.recoverHTTP(mux, nil))
	defer srv.Close()
	for range 2 {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "internal error") {
			t.Errorf("/readyz: %d %q, want 500 with an internal error", resp.StatusCode, body)
		}
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after the panics: %v %v", resp, err)
	}
	resp.Body.Close()
	if lines := linesWith(log, "panic while serving"); len(lines) != 2 || !strings.Contains(lines[0], "stack=") {
		t.Errorf("log lines: %q, want one per panic with its stack", lines)
	}
	if n := panics(t, m, telemetry.PanicHTTP); n != 2 {
		t.Errorf("dsh_panics_total{where=http} = %v, want 2", n)
	}
}
