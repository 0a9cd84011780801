package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestExportErrorsLoggedAsJSON: a collector that refuses the spans (an
// HTTP error, or nothing listening) is reported through the host's
// logger, whose JSON lines all decode, and never to OTel's global error
// handler (which prints plain text to stderr).
func TestExportErrorsLoggedAsJSON(t *testing.T) {
	var global atomic.Int32
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) { global.Add(1) }))
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not here", http.StatusForbidden)
	}))
	defer refusing.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	for name, endpoint := range map[string]string{"HTTP 403": refusing.URL, "connection refused": closed} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "2000"}
			for k, v := range env {
				t.Setenv(k, v) // the exporter reads them itself
			}
			log := &mcptest.SyncBuffer{}
			tp, err := TracingFromEnv(context.Background(), func(k string) string { return env[k] }, "v0",
				slog.New(slog.NewJSONHandler(log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, span := tp.Tracer("t").Start(ctx, "s")
			span.End()
			if err := tp.ForceFlush(ctx); err != nil {
				t.Errorf("ForceFlush: %v", err)
			}
			if err := tp.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			var warned int
			for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("a log line is not JSON: %q", line)
				}
				if rec["level"] == "WARN" && strings.Contains(rec["msg"].(string), "spans not exported") && rec["err"] != "" && rec["spans"] == 1.0 {
					warned++
				}
			}
			if warned != 1 {
				t.Errorf("%d warnings of the failed export, want 1:\n%s", warned, log)
			}
		})
	}
	if n := global.Load(); n != 0 {
		t.Errorf("OTel's global error handler got %d errors", n)
	}
}

// failingExporter fails while fail is set.
type failingExporter struct {
	fail bool
	sdktrace.SpanExporter
}

func (f *failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	if f.fail {
		return errors.New("collector down")
	}
	return nil
}

// TestExportErrorsRateLimited: a collector down logs its first failure at
// once, then one line a minute with the failures meanwhile, and a line
// when exports succeed again.
func TestExportErrorsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	exp := &failingExporter{fail: true}
	e := newLoggedExporter(exp, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})))
	clock := time.Unix(0, 0)
	e.now = func() time.Time { return clock }
	export := func(n int) {
		if err := e.ExportSpans(context.Background(), make([]sdktrace.ReadOnlySpan, n)); err != nil {
			t.Fatalf("ExportSpans returned %v: the SDK would hand it to OTel's global handler", err)
		}
	}
	export(1)
	for range 5 {
		clock = clock.Add(10 * time.Second)
		export(2)
	}
	clock = clock.Add(20 * time.Second) // a minute after the first line
	export(3)
	exp.fail = false
	export(1)
	want := []string{
		`level=WARN msg="tracing: spans not exported; check the collector (OTEL_EXPORTER_OTLP_ENDPOINT)" err="collector down" spans=1 failedExports=1`,
		`level=WARN msg="tracing: spans not exported; check the collector (OTEL_EXPORTER_OTLP_ENDPOINT)" err="collector down" spans=13 failedExports=6`,
		`level=INFO msg="tracing: spans are exported again" failedExports=0`,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(buf.String()), "\n")); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}
