package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/dsh-host/dsh-host/internal/browser"
	"github.com/dsh-host/dsh-host/services/logins"
)

// callbackPath is where the authorization server redirects the browser.
const callbackPath = "/callback"

// callback is the loopback listener of one browser step: on 127.0.0.1
// only, it takes the first redirect that carries this login's state, and
// closes once that one is answered (or when the login gives up).
type callback struct {
	ln          net.Listener
	srv         *http.Server
	redirectURL string

	mu    sync.Mutex
	prm   []byte // the resource metadata the listener serves, if any
	state string // the state the authorization URL carries
	done  bool
	// result receives the one accepted redirect (cap 1).
	result chan callbackResult
	served chan struct{}
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// listenCallback listens on 127.0.0.1:port (0: any free port).
func listenCallback(port int) (*callback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("oauth.callbackPort: listen for the login redirect on 127.0.0.1:%d: %w", port, err)
	}
	cb := &callback{
		ln:          ln,
		redirectURL: "http://" + ln.Addr().String() + callbackPath,
		result:      make(chan callbackResult, 1),
		served:      make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc(callbackPath, cb.handle)
	mux.HandleFunc(resourceMetadataPath, cb.serveResourceMetadata)
	cb.srv = &http.Server{Handler: mux}
	go func() {
		defer close(cb.served)
		_ = cb.srv.Serve(ln)
	}()
	return cb, nil
}

// close stops the listener and waits for it.
func (cb *callback) close() {
	_ = cb.srv.Close()
	<-cb.served
}

// resourceMetadataPath is where the listener serves the protected
// resource metadata it stands in for (legacyResourceMetadata).
const resourceMetadataPath = "/resource-metadata"

func (cb *callback) serveResourceMetadata(w http.ResponseWriter, _ *http.Request) {
	cb.mu.Lock()
	prm := cb.prm
	cb.mu.Unlock()
	if prm == nil {
		http.NotFound(w, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(prm)
}

func (cb *callback) handle(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cb.mu.Lock()
	defer cb.mu.Unlock()
	switch {
	case cb.done:
		http.Error(w, "This login is over; start a new one.", http.StatusGone)
		return
	case cb.state == "" || q.Get("state") != cb.state:
		// Not this login's redirect: ignored, so that a stray or forged
		// request cannot end the login.
		http.Error(w, "The state does not match this login; ignored.", http.StatusBadRequest)
		return
	case q.Get("error") != "":
		cb.done = true
		msg := strings.TrimSpace(q.Get("error") + ": " + q.Get("error_description"))
		cb.result <- callbackResult{err: fmt.Errorf("the authorization server refused the login: %s", msg)}
		http.Error(w, "Login refused: "+msg, http.StatusForbidden)
		return
	case q.Get("code") == "":
		http.Error(w, "The redirect carries no code; ignored.", http.StatusBadRequest)
		return
	}
	cb.done = true
	cb.result <- callbackResult{res: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>Logged in</title><p>%s</p>", html.EscapeString("Logged in. You can close this window."))
}

// await shows authURL to the person (b) and waits for the redirect, for
// ctx at most.
func (cb *callback) await(ctx context.Context, b *logins.BrowserStep, serverName, authURL string) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, fmt.Errorf("authorization URL: %w", err)
	}
	// The URL comes from the authorization server's metadata: another
	// scheme would have the opener run whatever handles it.
	if err := browser.WebPage(authURL); err != nil {
		return nil, fmt.Errorf("the authorization server's authorization endpoint %w; ask the server's operator to serve it over https", err)
	}
	cb.mu.Lock()
	cb.state = u.Query().Get("state")
	cb.mu.Unlock()
	out := b.Out
	if out != nil {
		fmt.Fprintf(out, "Log in to %s in your browser. If it does not open, visit:\n  %s\n", serverName, authURL)
	}
	open := b.Open
	if open == nil {
		open = openBrowser
	}
	if err := open(ctx, authURL); err != nil && out != nil {
		fmt.Fprintf(out, "(no browser opened: %v)\n", err)
	}
	select {
	case r := <-cb.result:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no login redirect reached %s: %w", cb.redirectURL, ctx.Err())
	}
}

// openBrowser is browser.Open with the signature of logins.BrowserStep.Open.
func openBrowser(_ context.Context, u string) error { return browser.Open(u) }

// legacyResourceMetadata reads the issuer of the authorization server
// metadata at the root of ch's server (the 2025-03-26 location), serves
// resource metadata naming it, and returns ch pointing at it.
func (cb *callback) legacyResourceMetadata(ctx context.Context, client *http.Client, ch *challenge) (*challenge, error) {
	root := *ch.req.URL
	root.Path, root.RawQuery, root.Fragment = "/.well-known/oauth-authorization-server", "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata at %s: %w", root.String(), err)
	}
	defer resp.Body.Close()
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("authorization server metadata at %s: %s", root.String(), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta); err != nil || meta.Issuer == "" {
		return nil, fmt.Errorf("authorization server metadata at %s names no issuer", root.String())
	}
	prm, _ := json.Marshal(map[string]any{"resource": ch.req.URL.String(), "authorization_servers": []string{meta.Issuer}})
	cb.mu.Lock()
	cb.prm = prm
	cb.mu.Unlock()
	u, _ := url.Parse(cb.redirectURL)
	u.Path = resourceMetadataPath
	legacy := *ch
	legacy.header = ch.header.Clone()
	legacy.header.Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", u.String()))
	return &legacy, nil
}
