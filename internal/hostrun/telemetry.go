package hostrun

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/internal/version"
)

// telemetryFlushTimeout bounds the flush of the spans still batched at exit:
// a collector that is down must not hold up the shutdown.
const telemetryFlushTimeout = 5 * time.Second

// StartTelemetry gives the host the process's telemetry: a registry of
// metrics (host.Options.Metrics; the host's Gatherer serves it with every
// instance's series, which a gateway entry's metrics key or serve
// --metrics serves), and traces when the standard OTEL_* variables ask
// for them (telemetry.TracingFromEnv). stop flushes the spans still
// batched; call it after the host's shutdown, so that the shutdown's own
// spans go too. An OTEL_* setting this build cannot honour is logged and
// tracing stays off: the host still serves.
func StartTelemetry(ctx context.Context, opts *host.Options, logger *slog.Logger) (stop func()) {
	tp, err := telemetry.TracingFromEnv(ctx, os.Getenv, version.String(), logger)
	if err != nil {
		logger.Error("tracing is off", "err", err)
	}
	opts.Metrics = telemetry.NewRegistry()
	if tp != nil { // a nil *TracerProvider in the interface would not be nil
		opts.Tracing = tp
		logger.Info("tracing: exporting spans over OTLP")
	}
	return func() {
		if tp == nil {
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("tracing: spans not exported at exit", "err", err)
		}
	}
}
