package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// listenMetrics serves g (the host's metrics) in Prometheus text format at
// /metrics on addr (the gateway entry's metrics key) until s is disposed,
// and returns the URL. The listener is the gateway's own, apart from
// /mcp: a scraper needs no MCP token, and a slow scrape never holds a
// client's connection.
func listenMetrics(s *host.Scope, g prometheus.Gatherer, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("metrics %s: %w (is another process serving there? pick another port)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", telemetry.Handler(g))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.Logger().Handler(), slog.LevelWarn),
	}
	url := "http://" + ln.Addr().String() + "/metrics"
	s.Go("metrics "+url, func(ctx context.Context) {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			s.Logger().Error("the gateway's metrics listener stopped; edit its entry, or restart, to serve again", "url", url, "err", err)
			return
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger().Warn("the gateway's metrics listener", "url", url, "err", err)
		}
	})
	s.Logger().Info("gateway metrics listening", "url", url)
	return url, nil
}
