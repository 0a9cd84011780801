package gateway

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
				http.Error(w, "Unauthorized: send Authorization: Bearer <token>, the token in the variable --token-env names", http.StatusUnauthorized)
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
	if IsLoopbackHost(u.Hostname()) {
		return true
	}
	return host != "" && strings.EqualFold(u.Host, host)
}

// IsLoopbackHost reports whether host (a name or an IP, without port or
// brackets) is the local machine only: "localhost" or a loopback IP.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
