package webui_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/webui"
)

// stub answers Status; any other question panics, which the console
// answers with an error (a panic serving one request ends nothing).
type stub struct{ app.App }

func (stub) Status(context.Context) (app.Status, error) {
	return app.Status{PID: 7, File: "c.yml"}, nil
}

func startStub(t *testing.T) (*webui.Console, string) {
	t.Helper()
	con, err := webui.Start(stub{}, webui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { con.Close() })
	u, _ := url.Parse(con.URL())
	return con, "http://" + u.Host
}

// noRedirect is a client that shows redirects instead of following them.
func noRedirect(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, u string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestSignInTradesTheTokenForACookie: the printed URL's token sets an
// HttpOnly, SameSite=Strict cookie and redirects to the page without it;
// without the cookie, or with a wrong token, nothing is served.
func TestSignInTradesTheTokenForACookie(t *testing.T) {
	con, base := startStub(t)
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	if r := do(t, c, "GET", base+"/servers", nil, ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the cookie: %s; want 401", r.Status)
	}
	if r := do(t, c, "GET", base+"/?token=wrong", nil, ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %s; want 401", r.Status)
	}
	r := do(t, c, "GET", con.URL(), nil, "")
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("the token: %s to %q; want 303 to /", r.Status, r.Header.Get("Location"))
	}
	set := r.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(set, want) {
			t.Errorf("cookie %q lacks %s", set, want)
		}
	}
	r = do(t, c, "GET", base+"/servers", nil, "")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("with the cookie: %s", r.Status)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP %q allows inline code", csp)
	}
}

// TestRefusesOtherSites: a Host that is not this console's (DNS
// rebinding), a POST from another origin or with none, and a cross-site
// request that is not a navigation are refused before anything runs;
// this page's own POST passes.
func TestRefusesOtherSites(t *testing.T) {
	con, base := startStub(t)
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	do(t, c, "GET", con.URL(), nil, "")
	host := strings.TrimPrefix(base, "http://")
	json := map[string]string{"Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range json {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		want               int
	}{
		{"rebound host", "GET", "/servers", map[string]string{"Host": "evil.example:" + strings.Split(host, ":")[1]}, http.StatusMisdirectedRequest},
		{"rebound host, token", "GET", "/?token=x", map[string]string{"Host": "attacker.test"}, http.StatusMisdirectedRequest},
		{"POST without origin", "POST", "/api/answer", with(nil), http.StatusForbidden},
		{"POST from another site", "POST", "/api/answer", with(map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden},
		{"restart from another site", "POST", "/api/restart", with(map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden},
		{"POST from another port", "POST", "/api/answer", with(map[string]string{"Origin": "http://127.0.0.1:1"}), http.StatusForbidden},
		{"POST, cross-site fetch", "POST", "/api/answer", with(map[string]string{"Origin": base, "Sec-Fetch-Site": "cross-site"}), http.StatusForbidden},
		{"GET, cross-site fetch", "GET", "/events/status", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, http.StatusForbidden},
		{"POST as a form", "POST", "/api/answer", map[string]string{"Origin": base, "Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"this page's POST", "POST", "/api/answer", with(map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}), http.StatusConflict},
	} {
		body := `{"id":"x","answer":"once"}`
		if r := do(t, c, tc.method, base+tc.path, tc.header, body); r.StatusCode != tc.want {
			t.Errorf("%s: %s; want %d", tc.name, r.Status, tc.want)
		}
	}
	// Without the cookie this page's own POST is refused too.
	if r := do(t, noRedirect(nil), "POST", base+"/api/answer", with(map[string]string{"Origin": base}), `{}`); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST without the cookie: %s; want 401", r.Status)
	}
}

// TestLoopbackOnly: the console listens on loopback only.
func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:80"} {
		if con, err := webui.Start(stub{}, webui.Options{Addr: addr}); err == nil {
			con.Close()
			t.Errorf("%s: started; want refused", addr)
		} else if !strings.Contains(err.Error(), "loopback") && !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %v; want the address named", addr, err)
		}
	}
}

// TestPanicAnswersOneRequest: a question the app panics on answers that
// request with an error, and the console goes on.
func TestPanicAnswersOneRequest(t *testing.T) {
	con, base := startStub(t)
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	do(t, c, "GET", con.URL(), nil, "")
	if r := do(t, c, "GET", base+"/tools", nil, ""); r.StatusCode != http.StatusInternalServerError {
		t.Errorf("a panicking page: %s; want 500", r.Status)
	}
	if r := do(t, c, "GET", base+"/servers", nil, ""); r.StatusCode != http.StatusOK {
		t.Errorf("after the panic: %s", r.Status)
	}
}

func (stub) Watch(ctx context.Context) (<-chan app.StatusEvent, error) {
	ch := make(chan app.StatusEvent)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

// TestStreamsBounded: pages left open hold at most 16 event streams (each
// may hold a connection to the host's control socket); one more is
// answered 503 at once, and a stream closed frees its place.
func TestStreamsBounded(t *testing.T) {
	con, base := startStub(t)
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	do(t, c, "GET", con.URL(), nil, "")
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	get := func() *http.Response {
		req, _ := http.NewRequest("GET", base+"/events/status", nil)
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for range 16 {
		r := get()
		if r.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s", len(open)+1, r.Status)
		}
		open = append(open, r)
	}
	r := get()
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the 17th stream: %s; want 503", r.Status)
	}
	open[0].Body.Close()
	open = open[1:]
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := get()
		if r.StatusCode == http.StatusOK {
			open = append(open, r)
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("a closed stream's place was not freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOneConsoleAnswersAsks: the first console of a composition holds its
// approvals; a second one says so on its Approvals page and answers none;
// once the first closes, a new console holds them.
func TestOneConsoleAnswersAsks(t *testing.T) {
	home, err := os.MkdirTemp("", "dshw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	file := filepath.Join(home, "composition.yml")
	if err := os.WriteFile(file, []byte("plugins: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	approvals := func(con *webui.Console) string {
		u, _ := url.Parse(con.URL())
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		do(t, c, "GET", con.URL(), nil, "")
		resp, err := c.Get("http://" + u.Host + "/approvals")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first, err := webui.StartFor(stub{}, file, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := webui.StartFor(stub{}, file, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if page := approvals(second); !strings.Contains(page, "another console of this composition") {
		t.Errorf("the second console's Approvals page:\n%s\nwant it to say another console answers", page)
	}
	if page := approvals(first); !strings.Contains(page, "Nothing waits for an answer") {
		t.Errorf("the first console's Approvals page:\n%s", page)
	}
	first.Close()
	third, err := webui.StartFor(stub{}, file, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if page := approvals(third); !strings.Contains(page, "Nothing waits for an answer") {
		t.Errorf("after the first closed, a new console's Approvals page:\n%s", page)
	}
}

// TestCloseEndsStreams: closing the console ends each page's event stream
// as a finished response (the page is told, and reconnects elsewhere), not
// by cutting its connection once the shutdown gives up waiting.
func TestCloseEndsStreams(t *testing.T) {
	con, base := startStub(t)
	jar, _ := cookiejar.New(nil)
	c := noRedirect(jar)
	do(t, c, "GET", con.URL(), nil, "")
	req, _ := http.NewRequest("GET", base+"/events/status", nil)
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("the stream: %s", r.Status)
	}
	closed := make(chan error, 1)
	go func() { closed <- con.Close() }()
	if _, err := io.ReadAll(r.Body); err != nil {
		t.Errorf("the stream at the console's close: %v; want its end", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestURLIsWhereItListens: a console on another loopback address than
// 127.0.0.1 (::1, 127.0.0.2) prints a URL that reaches it and signs in.
func TestURLIsWhereItListens(t *testing.T) {
	for _, addr := range []string{"[::1]:0", "127.0.0.2:0"} {
		con, err := webui.Start(stub{}, webui.Options{Addr: addr})
		if err != nil {
			t.Logf("%s: %v (not on this machine)", addr, err)
			continue
		}
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		resp, err := c.Get(con.URL())
		if err != nil {
			t.Errorf("%s: the printed URL %s: %v", addr, con.URL(), err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: the printed URL %s: %s", addr, con.URL(), resp.Status)
			}
		}
		con.Close()
	}
}
