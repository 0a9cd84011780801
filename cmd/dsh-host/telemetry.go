package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/internal/version"
)

// telemetryFlushTimeout bounds the flush of the spans still batched at exit:
// a collector that is down must not hold up the shutdown.
const telemetryFlushTimeout = 5 * time.Second

// startTelemetry makes the process's telemetry and puts it in opts.Context,
// where every instance finds it: traces when the standard OTEL_* variables
// ask for them (telemetry.TracingFromEnv), and metrics, which a gateway
// entry's metrics key serves. stop flushes the spans still batched; call
// it after the host's shutdown, so that the shutdown's own spans go too.
// An OTEL_* setting this build cannot honour is logged and tracing stays
// off: the host still serves.
func startTelemetry(ctx context.Context, opts *host.Options, logger *slog.Logger) (stop func()) {
	tp, err := telemetry.TracingFromEnv(ctx, os.Getenv, version.String())
	if err != nil {
		logger.Error("tracing is off", "err", err)
	}
	var provider trace.TracerProvider // a nil *TracerProvider in it would not be nil
	if tp != nil {
		provider = tp
		logger.Info("tracing: exporting spans over OTLP")
	}
	t := telemetry.New(provider, telemetry.NewMetrics())
	base := opts.Context
	if base == nil {
		base = context.Background()
	}
	opts.Context = telemetry.With(base, t)
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

// observeHost reports h's reloads and instance states in the metrics that
// opts.Context carries (startTelemetry), read at each scrape.
func observeHost(h *host.Host, opts *host.Options) {
	if opts == nil || opts.Context == nil {
		return
	}
	telemetry.From(opts.Context).Metrics().RegisterHost(telemetry.HostStats{
		Reloads: func() (applied, failed, skipped int) {
			r := h.Reloads()
			return r.Applied, r.Failed, r.Skipped
		},
		States: func() map[string]int {
			n := map[string]int{}
			for _, st := range h.Status() {
				n[string(st.State)]++
			}
			return n
		},
	})
}
