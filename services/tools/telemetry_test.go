package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestExecuteIsObserved: with telemetry, every Execute is an execute_tool
// span (child of the caller's span, with error.type on a failure) and
// moves the calls, errors and latency metrics of its server, tool and
// outcome.
func TestExecuteIsObserved(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer tp.Shutdown(context.Background())
	reg := prometheus.NewRegistry()
	m, err := tools.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := tools.New(&tools.Options{Tracer: tp.Tracer("test"), Metrics: m})
	s := testScope(t)
	mustRegister(t, r, tools.Definition{Name: "mcp__fx__ok", Origin: tools.Origin{Server: "fx", RawName: "ok"},
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "fine"}, nil }})
	mustRegister(t, r, tools.Definition{Name: "mcp__fx__broken", Origin: tools.Origin{Server: "fx", RawName: "broken"},
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, errors.New("boom") }})
	mustRegister(t, r, tools.Definition{Name: "guarded",
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "never"}, nil }})
	r.OnGuard(s, "guarded", func(context.Context, tools.Call) error { return errors.New("no") })

	parentCtx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	for _, name := range []string{"mcp__fx__ok", "mcp__fx__ok", "mcp__fx__broken", "guarded", "absent"} {
		r.Execute(parentCtx, testCaller, name, nil)
	}
	parent.End()

	type span struct{ Name, ErrorType, Parent string }
	var got []span
	for _, s := range exporter.GetSpans() {
		if s.Name == "caller" {
			continue
		}
		sp := span{Name: s.Name, Parent: s.Parent.SpanID().String()}
		for _, a := range s.Attributes {
			if a.Key == "error.type" {
				sp.ErrorType = a.Value.AsString()
			}
		}
		got = append(got, sp)
	}
	p := parent.SpanContext().SpanID().String()
	want := []span{
		{"execute_tool mcp__fx__ok", "", p}, {"execute_tool mcp__fx__ok", "", p},
		{"execute_tool mcp__fx__broken", "tool_error", p}, {"execute_tool guarded", "refused", p}, {"execute_tool absent", "unknown_tool", p},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}

	counts := map[string]float64{
		"ok":      counter(t, reg, "dsh_tool_calls_total", "fx", "mcp__fx__ok", "ok"),
		"broken":  counter(t, reg, "dsh_tool_calls_total", "fx", "mcp__fx__broken", "tool_error"),
		"errors":  counter(t, reg, "dsh_tool_call_errors_total", "fx", "mcp__fx__broken", "tool_error"),
		"refused": counter(t, reg, "dsh_tool_calls_total", "", "guarded", "refused"),
	}
	if diff := cmp.Diff(map[string]float64{"ok": 2, "broken": 1, "errors": 1, "refused": 1}, counts); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// counter returns the value of the counter name{server, tool, outcome or
// error_type}, -1 when there is no such series.
func counter(t *testing.T, g prometheus.Gatherer, name, server, tool, outcome string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, c := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range c.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			if have["server"] == server && have["tool"] == tool && (have["outcome"] == outcome || have["error_type"] == outcome) {
				return c.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// BenchmarkExecuteTelemetry measures what telemetry adds to a call of a
// no-op tool (among 1,000): off (no tracer nor metrics: one nil check),
// metrics alone, tracing with the SDK (sampled, spans batched to no
// exporter), and both. OTel's no-op provider is off: a scope gives no
// tracer for it (host.Scope.Tracer).
func BenchmarkExecuteTelemetry(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"q":"x"}`)
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(discardSpans{}))
	defer sdk.Shutdown(ctx)
	metrics := func() *tools.Metrics {
		m, err := tools.NewMetrics(prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name string
		opts tools.Options
	}{
		{"off", tools.Options{}},
		{"metrics", tools.Options{Metrics: metrics()}},
		{"tracing=sdk", tools.Options{Tracer: sdk.Tracer("bench")}},
		{"tracing=sdk+metrics", tools.Options{Tracer: sdk.Tracer("bench"), Metrics: metrics()}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := benchRegistry(b, &c.opts)
			b.ReportAllocs()
			for b.Loop() {
				if res := r.Execute(ctx, testCaller, "mcp__bench__noop", args); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}

// discardSpans ends spans without exporting them: the cost measured is
// the span's, not an exporter's.
type discardSpans struct{}

func (discardSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discardSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discardSpans) Shutdown(context.Context) error                  { return nil }
func (discardSpans) ForceFlush(context.Context) error                { return nil }
