package webui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// csp allows the page's own scripts, styles, images and connections and
// nothing else: no inline script or style attribute, no frame, no plugin,
// no form posted elsewhere. data: images are tool results shown as a
// model gets them.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// secret returns 32 random bytes, base64url.
func secret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// gate holds one run's secrets and the addresses the page is served as.
type gate struct {
	token  string // in the printed URL, traded for the cookie
	cookie string // the session cookie's value
	name   string // the cookie's name: per port, as cookies ignore ports
	hosts  map[string]bool
	port   string
	// origin is where it listens, as the page is opened:
	// http://127.0.0.1:PORT, or the other loopback address it was given.
	origin string
}

func newGate(addr net.Addr) *gate {
	_, port, _ := net.SplitHostPort(addr.String())
	g := &gate{token: secret(), cookie: secret(), name: "dsh_ui_" + port, port: port, hosts: map[string]bool{},
		origin: "http://" + addr.String()}
	// The names a browser on this machine reaches the listener by; any
	// other Host is a page of another site resolved to loopback (DNS
	// rebinding).
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		g.hosts[h+":"+port] = true
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsUnspecified() {
		g.hosts[net.JoinHostPort(tcp.IP.String(), port)] = true
	}
	return g
}

// loopback refuses an address a browser of another machine could reach:
// the console is plain HTTP, its cookie readable on the way.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--ui address %q: %w (want HOST:PORT, such as 127.0.0.1:0)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--ui address %q is not a loopback address: the web console serves plain HTTP and answers this machine only (use 127.0.0.1:PORT)", addr)
	}
	return nil
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// wrap is every request's gate: headers, Host, Origin, then the session.
// A GET with the run's token sets the cookie and redirects to the same
// page without the token, so that it stays out of history and referrers.
func (g *gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !g.hosts[r.Host] {
			http.Error(w, "this page answers only as "+g.origin+" (the Host header names another site)", http.StatusMisdirectedRequest)
			return
		}
		if !g.sameOrigin(r) {
			http.Error(w, "refused: the request comes from another site", http.StatusForbidden)
			return
		}
		if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet {
			if !equal(tok, g.token) {
				http.Error(w, "this token is not this console's: open the URL dsh-host ui printed", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: g.name, Value: g.cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(g.name)
		if err != nil || !equal(c.Value, g.cookie) {
			http.Error(w, "not signed in: open the URL dsh-host ui printed (it carries this run's token)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether r comes from this console's own pages. A
// request that changes anything (any method but GET and HEAD) must say
// its origin, and it must be this one; a GET that says one must say this
// one too (Sec-Fetch-Site, Origin).
func (g *gate) sameOrigin(r *http.Request) bool {
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		// A navigation from another site may only land on a page (a
		// bookmark, the printed URL opened elsewhere), never act.
		if !safe || r.Header.Get("Sec-Fetch-Mode") != "navigate" {
			return false
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return safe
	}
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && strings.EqualFold(u.Host, r.Host) && g.hosts[u.Host]
}
