// Package metricshttp is the host's one /metrics listener: the host's
// metrics in Prometheus text format, on a listener of its own apart from
// any MCP endpoint (a scraper needs no MCP token, and a slow scrape never
// holds a client's connection). The metrics plugin starts it, and so does
// a gateway entry's metrics key; both claim Claim, so that a composition
// serves the host's metrics once.
package metricshttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// Claim is the name the entry that serves the host's metrics holds; key
// is its config key (listen, metrics). Two entries that would each serve
// them are a config error naming both.
func Claim(key string) host.Claim {
	return host.Claim{Kind: "the host's metrics listener", Value: "/metrics", Key: key}
}

// CheckAddr checks a listener's address.
func CheckAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%q: want HOST:PORT, such as 127.0.0.1:9464: %w", addr, err)
	}
	return nil
}

// The listener's timeouts: a scrape is one small GET.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 60 * time.Second
	// writeTimeout bounds a scrape to a scraper that does not read.
	writeTimeout    = 30 * time.Second
	shutdownTimeout = 5 * time.Second
)

// Listen serves g (the host's metrics: Scope.Gatherer) at /metrics on
// addr until s is disposed, and returns the URL. With a token, a scrape
// without it (Authorization: Bearer TOKEN) is answered 401. An address
// beyond loopback without a token is served, with a warning: the port
// must then be where only the scraper reaches.
func Listen(s *host.Scope, g prometheus.Gatherer, addr, token string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s: %w (is another process serving there? pick another port)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", requireToken(telemetry.Handler(g), token))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		WriteTimeout:      writeTimeout,
		ErrorLog:          slog.NewLogLogger(s.Logger().Handler(), slog.LevelWarn),
	}
	url := "http://" + ln.Addr().String() + "/metrics"
	s.Go("metrics "+url, func(ctx context.Context) {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			s.Logger().Error("the metrics listener stopped; edit its entry, or restart, to serve again", "url", url, "err", err)
			return
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger().Warn("the metrics listener", "url", url, "err", err)
		}
	})
	if !Loopback(addr) && token == "" {
		s.Logger().Warn("the metrics listener is reachable beyond this machine and needs no token: set tokenEnv or tokenFile in a metrics entry, keep its port where only the scraper reaches, or bind 127.0.0.1", "url", url)
	}
	s.Logger().Info("metrics listening", "url", url, "token", token != "")
	return url, nil
}

// requireToken answers 401 to a request without token, when there is
// one; the check is the gateway's (bearer.HasStatic).
func requireToken(next http.Handler, token string) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearer.HasStatic(r.Header.Get("Authorization"), want) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dsh-host metrics"`)
			http.Error(w, "Unauthorized: send Authorization: Bearer <token>, the metrics entry's token (tokenEnv or tokenFile); Prometheus: authorization.credentials_file in the scrape config", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Loopback reports whether addr's host is this machine only.
func Loopback(addr string) bool {
	h, _, _ := net.SplitHostPort(addr)
	return bearer.LoopbackHost(h)
}
