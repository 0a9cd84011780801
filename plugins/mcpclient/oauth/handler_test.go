package oauth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/internal/tokenstore"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
	"github.com/dsh-host/dsh-host/services/logins"
)

// get sends a GET to u with a client whose connections end with the test.
func get(t *testing.T, u string) int {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(u)
	if err != nil {
		return 0 // refused: the listener is closed
	}
	resp.Body.Close()
	return resp.StatusCode
}

// awaitIn runs cb.await in the background with an opener that does
// nothing, and returns its outcome.
func awaitIn(cb *callback, ctx context.Context, authURL string) <-chan callbackResult {
	ch := make(chan callbackResult, 1)
	b := &logins.BrowserStep{Open: func(context.Context, string) error { return nil }}
	go func() {
		res, err := cb.await(ctx, b, "web", authURL)
		ch <- callbackResult{res, err}
	}()
	return ch
}

func TestCallbackWrongStateIgnoredThenOneUse(t *testing.T) {
	cb, err := listenCallback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.close()
	if !strings.HasPrefix(cb.redirectURL, "http://127.0.0.1:") {
		t.Fatalf("redirect URL %q is not on 127.0.0.1", cb.redirectURL)
	}
	done := awaitIn(cb, t.Context(), "https://as.example/authorize?state=good")
	// Before await has read the state, and with the wrong one: ignored.
	mcptest.WaitFor(t, 10*time.Second, "the state is set", func() bool { cb.mu.Lock(); defer cb.mu.Unlock(); return cb.state != "" })
	if code := get(t, cb.redirectURL+"?code=evil&state=bad"); code != http.StatusBadRequest {
		t.Errorf("wrong state answered %d, want 400", code)
	}
	if code := get(t, cb.redirectURL+"?state=good"); code != http.StatusBadRequest {
		t.Errorf("no code answered %d, want 400", code)
	}
	if code := get(t, cb.redirectURL+"?code=c1&state=good&iss="+url.QueryEscape("https://as.example")); code != http.StatusOK {
		t.Fatalf("the right redirect answered %d", code)
	}
	r := <-done
	if r.err != nil || r.res.Code != "c1" || r.res.Iss != "https://as.example" {
		t.Fatalf("await = %+v, %v", r.res, r.err)
	}
	// A second redirect does not count.
	if code := get(t, cb.redirectURL+"?code=c2&state=good"); code == http.StatusOK {
		t.Errorf("a second redirect answered 200")
	}
	cb.close()
	if code := get(t, cb.redirectURL+"?code=c3&state=good"); code != 0 {
		t.Errorf("the listener still answers after close: %d", code)
	}
}

func TestCallbackRefusalAndTimeout(t *testing.T) {
	cb, err := listenCallback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.close()
	done := awaitIn(cb, t.Context(), "https://as.example/authorize?state=s")
	mcptest.WaitFor(t, 10*time.Second, "the state is set", func() bool { cb.mu.Lock(); defer cb.mu.Unlock(); return cb.state != "" })
	get(t, cb.redirectURL+"?state=s&error=access_denied&error_description=nope")
	if r := <-done; r.err == nil || !strings.Contains(r.err.Error(), "access_denied: nope") {
		t.Errorf("refusal: %v", r.err)
	}

	cb2, err := listenCallback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer cb2.close()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if r := <-awaitIn(cb2, ctx, "https://as.example/authorize?state=s"); !errors.Is(r.err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v", r.err)
	}
}

func TestCallbackPortTaken(t *testing.T) {
	cb, err := listenCallback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.close()
	u, _ := url.Parse(cb.redirectURL)
	p, _ := strconv.Atoi(u.Port())
	if _, err := listenCallback(p); err == nil || !strings.Contains(err.Error(), "oauth.callbackPort") {
		t.Errorf("a taken port: %v", err)
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A redirect with another issuer than the server's fails the login
// (RFC 9207), and nothing is stored.
func TestLoginWrongIssuer(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Options{WrongIss: true})
	store := tokenstore.New(t.TempDir())
	h := newHandler(Server{Name: "web", URL: as.URL}, store, nil, nil, discard())
	defer h.Close()
	client, base, endpoint := remote.NewClient(as.URL, nil)
	defer base.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader("{}"))
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated request: %v %v", resp, err)
	}
	ch := readChallenge(req, resp)
	err = h.login(t.Context(), &logins.BrowserStep{Open: oauthtest.Follow}, ch)
	if err == nil || !strings.Contains(err.Error(), "does not match expected issuer") {
		t.Fatalf("login with a wrong iss: %v", err)
	}
	if _, ok, _ := store.Load(h.serverURL, ""); ok {
		t.Error("a token was stored")
	}
}

// TestAwaitOpensOnlyWebPages: an authorization URL that is not https (or
// http on loopback) is refused with an error, and never reaches the opener.
func TestAwaitOpensOnlyWebPages(t *testing.T) {
	cb, err := listenCallback(0)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.close()
	for _, u := range []string{
		"x-evil-handler://localhost/run?cmd=calc&state=s",
		"file:///etc/passwd?state=s",
		"http://as.example/authorize?state=s",
		"javascript:alert(1)",
	} {
		opened := false
		b := &logins.BrowserStep{Open: func(context.Context, string) error { opened = true; return nil }}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := cb.await(ctx, b, "web", u)
		cancel()
		if opened || err == nil || !strings.Contains(err.Error(), "https") {
			t.Errorf("%s: opened %v, err %v; want refused with an error naming https", u, opened, err)
		}
	}
}
