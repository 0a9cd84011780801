package mcpclient

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

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"

	"github.com/dsh-host/dsh-host/internal/oauthtest"
	"github.com/dsh-host/dsh-host/internal/tokenstore"
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
	b := &BrowserStep{Open: func(context.Context, string) error { return nil }}
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
	eventually(t, "the state is set", func() bool { cb.mu.Lock(); defer cb.mu.Unlock(); return cb.state != "" })
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
	eventually(t, "the state is set", func() bool { cb.mu.Lock(); defer cb.mu.Unlock(); return cb.state != "" })
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
	cfg := Defaults()
	cfg.ServerName, cfg.Transport, cfg.URL = "web", TransportStreamableHTTP, as.URL
	store := tokenstore.New(t.TempDir())
	h := newOAuthHandlerWith(&cfg, store, nil, discard())
	defer h.close()
	client, base, endpoint := remote.NewClient(cfg.URL, nil)
	defer base.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader("{}"))
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unauthenticated request: %v %v", resp, err)
	}
	ch := readChallenge(req, resp)
	err = h.login(t.Context(), &BrowserStep{Open: oauthtest.Follow}, ch)
	if err == nil || !strings.Contains(err.Error(), "does not match expected issuer") {
		t.Fatalf("login with a wrong iss: %v", err)
	}
	if _, ok, _ := store.Load(h.serverURL, ""); ok {
		t.Error("a token was stored")
	}
}

func TestOAuthConfigValidation(t *testing.T) {
	base := func() Config {
		c := Defaults()
		c.ServerName, c.Transport, c.URL = "web", TransportStreamableHTTP, "https://mcp.example/mcp"
		return c
	}
	for _, tt := range []struct {
		name string
		set  func(*OAuth)
		want string // "" = valid
	}{
		{"preregistered", func(o *OAuth) {
			o.ClientID, o.ClientSecret, o.Scopes, o.CallbackPort = "id", "s", []string{"read"}, 8765
		}, ""},
		{"cimd", func(o *OAuth) { o.ClientMetadataURL = "https://me.example/client.json" }, ""},
		{"machine", func(o *OAuth) { o.Grant, o.ClientID, o.ClientSecret = GrantClientCredentials, "id", "s" }, ""},
		{"machine jwt", func(o *OAuth) {
			o.Grant, o.ClientID, o.PrivateKeyFile, o.SigningAlgorithm = GrantClientCredentials, "id", "k.pem", "ES256"
		}, ""},
		{"grant", func(o *OAuth) { o.Grant = "password" }, "oauth.grant"},
		{"port", func(o *OAuth) { o.CallbackPort = 70000 }, "oauth.callbackPort"},
		{"cimd http", func(o *OAuth) { o.ClientMetadataURL = "http://me.example/c.json" }, "oauth.clientMetadataUrl"},
		{"cimd root", func(o *OAuth) { o.ClientMetadataURL = "https://me.example/" }, "oauth.clientMetadataUrl"},
		{"scope space", func(o *OAuth) { o.Scopes = []string{"a b"} }, "oauth.scopes[0]"},
		{"secret alone", func(o *OAuth) { o.ClientSecret = "s" }, "oauth.clientSecret needs clientId"},
		{"machine no id", func(o *OAuth) { o.Grant, o.ClientSecret = GrantClientCredentials, "s" }, "oauth.clientId is required"},
		{"machine both", func(o *OAuth) {
			o.Grant, o.ClientID, o.ClientSecret, o.PrivateKeyFile = GrantClientCredentials, "id", "s", "k.pem"
		}, "exactly one of clientSecret and privateKeyFile"},
		{"key without grant", func(o *OAuth) { o.PrivateKeyFile = "k.pem" }, "oauth.privateKeyFile is only used"},
		{"alg", func(o *OAuth) {
			o.Grant, o.ClientID, o.PrivateKeyFile, o.SigningAlgorithm = GrantClientCredentials, "id", "k.pem", "HS256"
		}, "oauth.signingAlgorithm"},
	} {
		cfg := base()
		tt.set(&cfg.OAuth)
		err := cfg.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	stdio := Defaults()
	stdio.ServerName, stdio.Transport, stdio.Command = "s", TransportStdio, "x"
	stdio.OAuth.ClientID = "id"
	if err := stdio.Validate(); err == nil || !strings.Contains(err.Error(), "oauth is not an option of the stdio transport") {
		t.Errorf("oauth on stdio: %v", err)
	}
}
