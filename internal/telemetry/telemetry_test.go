package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTracingWanted: the standard variables turn OTLP export on, and what
// this build cannot do is an error naming the variable, not silence.
func TestTracingWanted(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{"nothing set", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none wins", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{"http/protobuf", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true, ""},
		{"grpc refused", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{"traces protocol wins", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
		{"console refused", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, false, "OTEL_TRACES_EXPORTER=console"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			on, err := tracingWanted(func(k string) string { return c.env[k] })
			if on != c.on || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("tracingWanted = %v, %v; want %v, error containing %q", on, err, c.on, c.err)
			}
		})
	}
}

// TestTracingFromEnvBuildsAnExporter: with an endpoint set, the provider
// is made (nothing is sent until a span ends), and its Shutdown returns.
func TestTracingFromEnvBuildsAnExporter(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SERVICE_NAME", "dsh-test")
	tp, err := TracingFromEnv(context.Background(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}[k]
	}, "v0", slog.New(slog.DiscardHandler))
	if err != nil || tp == nil {
		t.Fatalf("TracingFromEnv = %v, %v", tp, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with no span batched: %v", err)
	}
}

// TestMetaRoundTrip: a span context injected into a _meta map is the one
// extracted from it, tracestate included, next to keys that were there.
func TestMetaRoundTrip(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	parent := Extract(context.Background(), map[string]any{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "k=v"})
	if !trace.SpanContextFromContext(parent).IsRemote() {
		t.Fatal("no remote span context extracted")
	}
	ctx, span := tp.Tracer("t").Start(parent, "s")
	defer span.End()
	meta := Inject(ctx, map[string]any{"progressToken": 7})
	got := trace.SpanContextFromContext(Extract(context.Background(), meta))
	want := span.SpanContext().WithRemote(true)
	if !got.Equal(want) || meta["progressToken"] != 7 {
		t.Errorf("round trip: got %+v, want %+v (meta %v)", got, want, meta)
	}
	if diff := cmp.Diff(map[string]any{"progressToken": 7}, Inject(context.Background(), map[string]any{"progressToken": 7})); diff != "" {
		t.Errorf("Inject without a span changed _meta:\n%s", diff)
	}
	if Extract(context.Background(), nil) != context.Background() {
		t.Error("Extract of nil _meta made a new context")
	}
}
