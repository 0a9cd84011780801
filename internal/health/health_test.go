package health

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// gateway answers /healthz and /readyz as the gateway does, readyz with
// ready's status, and records the paths asked.
func gateway(t *testing.T, ready bool, paths *[]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*paths = append(*paths, r.URL.Path)
		switch {
		case r.URL.Path == "/healthz":
			w.Write([]byte("ok\n"))
		case r.URL.Path == "/readyz" && ready:
			w.Write([]byte("ready\n"))
		case r.URL.Path == "/readyz":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: draining\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCheckPaths: whatever path the URL has (the gateway's base, its /mcp
// endpoint), the check asks /healthz, or /readyz when Ready; a URL naming
// one of them is asked as it is; a 503 is an answer that is not OK, with
// its reason.
func TestCheckPaths(t *testing.T) {
	ctx := context.Background()
	var paths []string
	srv := gateway(t, false, &paths)
	for _, tc := range []struct {
		url   string
		ready bool
		path  string
		ok    bool
		body  string
	}{
		{srv.URL, false, "/healthz", true, "ok"},
		{srv.URL + "/", false, "/healthz", true, "ok"},
		{srv.URL + "/mcp?x=1#f", false, "/healthz", true, "ok"},
		{srv.URL + "/mcp", true, "/readyz", false, "not ready: draining"},
		{srv.URL + "/readyz", false, "/readyz", false, "not ready: draining"},
		{srv.URL + "/healthz", true, "/healthz", true, "ok"},
	} {
		paths = nil
		r, err := Check(ctx, tc.url, Options{Ready: tc.ready})
		if err != nil {
			t.Errorf("Check(%s, ready=%v): %v", tc.url, tc.ready, err)
			continue
		}
		if len(paths) != 1 || paths[0] != tc.path || r.OK() != tc.ok || r.Body != tc.body {
			t.Errorf("Check(%s, ready=%v) asked %q, got %+v; want %s, ok=%v, %q", tc.url, tc.ready, paths, r, tc.path, tc.ok, tc.body)
		}
	}
}

// TestCheckRefusesBadURLs: a URL that is not http(s) with a host, or
// carries a password, is an error naming it, and nothing is asked.
func TestCheckRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://127.0.0.1/", "http:///healthz", "unix:///run/dsh.sock", "http://user:s3cret@127.0.0.1:1/"} {
		_, err := Check(context.Background(), u, Options{Timeout: time.Second})
		if err == nil {
			t.Errorf("Check(%q) = nil error", u)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Check(%q) error shows the password: %v", u, err)
		}
	}
}

// TestCheckNoAnswer: a closed port and a server that never answers are
// errors, the latter within the timeout (bounded by the handler's release,
// not by a clock assertion).
func TestCheckNoAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	if r, err := Check(context.Background(), closed, Options{}); err == nil {
		t.Errorf("closed port: %+v, nil error", r)
	}

	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)
	_, err = Check(context.Background(), hang.URL, Options{Timeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("hanging server: %v", err)
	}
}

// TestCheckHostileAnswers: a redirect is not followed (and is no
// success), a huge body is read only so far, and control characters in
// it reach the output escaped.
func TestCheckHostileAnswers(t *testing.T) {
	var followed bool
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { followed = true })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("\x1b]0;pwned\x07ready " + strings.Repeat("x", 1<<20)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r, err := Check(context.Background(), srv.URL, Options{})
	if err != nil || r.OK() || r.Status != http.StatusFound || followed {
		t.Errorf("redirect: %+v, %v, followed %v", r, err, followed)
	}
	r, err = Check(context.Background(), srv.URL, Options{Ready: true})
	if err != nil || !r.OK() || strings.ContainsAny(r.Body, "\x1b\x07") || len(r.Body) > 300 {
		t.Errorf("hostile body: %v, %d bytes: %q…", err, len(r.Body), r.Body[:min(40, len(r.Body))])
	}
}

// TestCheckTLS: an https gateway's certificate is verified unless
// Insecure says not to.
func TestCheckTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) }))
	defer srv.Close()
	if r, err := Check(context.Background(), srv.URL, Options{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("unverifiable certificate: %+v, %v", r, err)
	}
	if r, err := Check(context.Background(), srv.URL, Options{Insecure: true}); err != nil || !r.OK() {
		t.Errorf("Insecure: %+v, %v", r, err)
	}
}

// TestInsecureOnLoopbackOnly: Insecure skips the verification for a
// loopback host alone; a gateway reached at another address is verified
// all the same (the image's HEALTHCHECK always passes --insecure, and a
// DSH_HEALTH_URL pointed across a network must not lose verification).
func TestInsecureOnLoopbackOnly(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.3.2.1": true, "::1": true, "localhost": true, "LOCALHOST": true,
		"192.0.2.2": false, "example.com": false, "localhost.example.com": false, "0.0.0.0": false, "::": false, "": false,
	} {
		if got := Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
	// A real server on this machine's first address that is not loopback.
	var ip net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP
			break
		}
	}
	if ip == nil {
		t.Skip("no IPv4 address but loopback here")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) }))
	srv.Listener = l
	srv.StartTLS()
	defer srv.Close()
	r, err := Check(context.Background(), srv.URL, Options{Insecure: true})
	if err == nil || !strings.Contains(err.Error(), "loopback address only") {
		t.Errorf("Insecure to %s: %+v, %v; want the certificate verified, and refused", srv.URL, r, err)
	}
}
