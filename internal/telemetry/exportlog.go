package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exportLogEvery bounds how often a collector that keeps refusing is
// logged: the first failure at once, then one line per interval with the
// number of failed exports meanwhile.
const exportLogEvery = time.Minute

// loggedExporter reports its exporter's failures through the host's
// logger, so that they take its format (--log-format json stays JSON).
// The SDK would hand a failed export's error to OTel's global error
// handler, which prints a plain line to stderr; so ExportSpans returns
// nil once the failure is logged: the spans are dropped either way.
type loggedExporter struct {
	sdktrace.SpanExporter
	logger *slog.Logger

	mu      sync.Mutex
	failing bool      // the last export failed
	logged  time.Time // when a failure was last logged
	failed  int       // failed exports since then, not logged
	spans   int       // spans they held
	now     func() time.Time
}

func newLoggedExporter(exp sdktrace.SpanExporter, logger *slog.Logger) *loggedExporter {
	return &loggedExporter{SpanExporter: exp, logger: logger, now: time.Now}
}

func (e *loggedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	switch {
	case err == nil && e.failing:
		e.failing = false
		e.logger.Info("tracing: spans are exported again", "failedExports", e.failed)
		e.failed, e.spans = 0, 0
	case err == nil:
	case !e.failing || now.Sub(e.logged) >= exportLogEvery:
		e.logger.Warn("tracing: spans not exported; check the collector (OTEL_EXPORTER_OTLP_ENDPOINT)",
			"err", err, "spans", len(spans)+e.spans, "failedExports", e.failed+1)
		e.failing, e.logged, e.failed, e.spans = true, now, 0, 0
	default:
		e.failed++
		e.spans += len(spans)
	}
	return nil
}
