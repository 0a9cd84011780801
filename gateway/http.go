package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// httpShutdownTimeout bounds how long a listener waits for requests in
// flight once its instance is disposed.
const httpShutdownTimeout = 5 * time.Second

// HTTPOptions configures HTTPHandler. The zero value (or nil) means an
// endpoint without a token, for a loopback address.
type HTTPOptions struct {
	// Token, when not empty, is the bearer token every request must carry
	// (Authorization: Bearer <token>). Compared in constant time.
	Token string
}

// HTTPHandler returns the gateway as a Streamable HTTP endpoint. It refuses,
// before go-sdk sees the request:
//   - a request with a foreign Origin, with 403 (DNS-rebinding protection:
//     only http(s) origins on localhost, 127.0.0.1 or [::1], on any port, or
//     the origin the request was addressed to, are let in; a request without
//     Origin, which is what non-browser clients send, is let in);
//   - when a token is set, a request without it, with 401 and
//     WWW-Authenticate: Bearer.
//
// go-sdk adds its own check: a request reaching a loopback address with a
// non-loopback Host header is refused with 403.
func (g *Gateway) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{Logger: g.sdkLogger()})
	return protect(h, o.Token)
}

// listen serves g as Streamable HTTP at /mcp on addr until s is disposed,
// and returns the endpoint's URL. The dispose ends the requests in flight
// (their event streams included), waiting for them at most
// httpShutdownTimeout.
func listen(s *host.Scope, g *Gateway, addr, token string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("http %s: %w (is another gateway running there? pick another port)", addr, err)
	}
	// Requests (and their long-lived event streams) derive from base, so
	// cancelling it at dispose ends them instead of waiting them out.
	base, cancelBase := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.HTTPHandler(&HTTPOptions{Token: token}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.Logger().Handler(), slog.LevelWarn),
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	s.Go("http "+url, func(ctx context.Context) {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			// The instance stays active, so a reload, which retries only
			// failed ones, leaves it as it is.
			s.Logger().Error("the gateway's HTTP listener stopped; edit its entry, or restart, to serve again", "url", url, "err", err)
			cancelBase()
			srv.Close()
			return
		case <-ctx.Done():
		}
		cancelBase()
		sctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			s.Logger().Warn("requests still running when the gateway stopped were cut", "url", url, "err", err)
			srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Logger().Warn("the gateway's HTTP listener", "url", url, "err", err)
		}
	})
	s.Logger().Info("gateway listening", "url", url, "token", token != "")
	return url, nil
}

// protect wraps next with the Origin and bearer-token checks.
func protect(next http.Handler, token string) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, r.Host) {
			http.Error(w, "Forbidden: cross-origin requests are not accepted from "+origin, http.StatusForbidden)
			return
		}
		if len(want) > 0 {
			got, ok := bearer(r.Header.Get("Authorization"))
			if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="dsh-host"`)
				http.Error(w, "Unauthorized: send Authorization: Bearer <token>, the token in the variable the gateway's tokenEnv names", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 9110 §11.1).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// originAllowed reports whether a browser at origin may call the gateway:
// a loopback origin on any port, or the very host the request addresses.
func originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // including the opaque origin "null"
	}
	if isLoopbackHost(u.Hostname()) {
		return true
	}
	return host != "" && strings.EqualFold(u.Host, host)
}

// isLoopbackHost reports whether host (a name or an IP, without port or
// brackets) is the local machine only: "localhost" or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
