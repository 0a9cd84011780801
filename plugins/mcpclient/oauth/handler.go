// Package oauth logs mcp-client in to remote servers: a person's login in
// the browser (authorization code with PKCE, by pre-registered client,
// metadata document or dynamic registration), or a machine's
// (client_credentials, with a secret or a signed JWT, jwt.go), with tokens
// kept and refreshed in internal/tokenstore under $DSH_HOME/oauth. The
// browser step listens on 127.0.0.1 for the redirect (callback.go); a 403
// insufficient_scope during a call asks again at once where a browser step
// is allowed. go-sdk's transport
// asks an auth.OAuthHandler for the token of each request, and calls its
// Authorize on a 401 or 403; Handler is that handler. It keeps tokens in the token store
// (internal/tokenstore), refreshes them there, and leaves the whole
// authorization code flow (discovery, registration, PKCE, resource, state
// and iss) to go-sdk's auth.AuthorizationCodeHandler, and client
// credentials to auth/extauth (a private-key JWT client is signed here,
// jwt.go: extauth takes a secret only).
//
// The browser step never runs inside a connection attempt, which is
// bounded by startupTimeoutMs: Authorize answers *NeedsLoginError, and the
// supervisor either runs the login itself (where a front end allowed the
// browser step on the logins service) or shows `needs login` and waits for
// a token to appear in the store.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/tokenstore"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
	"github.com/dsh-host/dsh-host/services/logins"
)

// tokenMargin is how long before its expiry an access token is refreshed.
const tokenMargin = time.Minute

// maxChallengeBody caps what of a 401/403 body an error quotes.
const maxChallengeBody = 1 << 10

// defaultRecheck is how long a request trusts the cached login (or its
// absence) without looking at the token file.
const defaultRecheck = time.Second

// Server is what a login is for: the server's name (for messages), its
// URL (which keys the token store, redacted) and its oauth block.
type Server struct {
	Name  string
	URL   string
	OAuth Config
}

// NeedsLoginError is the error of a request a person has to log in for.
type NeedsLoginError struct {
	ServerName string
	// Reason says why: no token, or the refresh was refused.
	Reason string
	// challenge is the 401 that asked, replayed by the login.
	challenge *challenge
}

func (e *NeedsLoginError) Error() string {
	return fmt.Sprintf("needs login — run: dsh-host login %s (%s)", e.ServerName, e.Reason)
}

// challenge is what a 401 or 403 said: the request it answered (its URL
// is what discovery starts from), its WWW-Authenticate headers and the
// start of its body.
type challenge struct {
	req    *http.Request
	status int
	header http.Header
	body   string
}

func readChallenge(req *http.Request, resp *http.Response) *challenge {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxChallengeBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	// The request keeps only its URL: its Authorization header is a token.
	r := &http.Request{Method: req.Method, URL: req.URL, Header: http.Header{}}
	return &challenge{req: r, status: resp.StatusCode, header: resp.Header.Clone(), body: strings.TrimSpace(string(body))}
}

// response rebuilds the answer for a handler's Authorize (which closes its
// body).
func (c *challenge) response() *http.Response {
	return &http.Response{StatusCode: c.status, Header: c.header, Body: io.NopCloser(strings.NewReader(c.body)), Request: c.req}
}

// bearerParam returns a parameter of the challenge's Bearer scheme.
func (c *challenge) bearerParam(name string) string {
	cs, _ := oauthex.ParseWWWAuthenticate(c.header.Values("WWW-Authenticate"))
	for _, ch := range cs {
		if ch.Scheme == "bearer" && ch.Params[name] != "" {
			return ch.Params[name]
		}
	}
	return ""
}

// bearer reports whether the answer carries a Bearer challenge.
func (c *challenge) bearer() bool {
	cs, _ := oauthex.ParseWWWAuthenticate(c.header.Values("WWW-Authenticate"))
	for _, ch := range cs {
		if ch.Scheme == "bearer" {
			return true
		}
	}
	return false
}

// explain says what the server said: its status, error description and
// body, for an error a user can act on.
func (c *challenge) explain() string {
	parts := []string{fmt.Sprintf("the server answered %d %s", c.status, http.StatusText(c.status))}
	if e := c.bearerParam("error"); e != "" {
		d := c.bearerParam("error_description")
		parts = append(parts, strings.TrimSpace(e+": "+d))
	}
	if c.body != "" {
		parts = append(parts, fmt.Sprintf("body %q", c.body))
	}
	return strings.Join(parts, "; ")
}

// Handler is one instance's auth.OAuthHandler. It lives as long as
// the instance, across connections.
type Handler struct {
	serverName string
	// browser is the browser step a front end allowed, nil when none.
	browser func() *logins.BrowserStep
	// serverURL keys the store: the configured URL with its secrets
	// redacted (redactURL), so none lands in the token file.
	serverURL string
	oauth     Config
	store     *tokenstore.Store
	storeErr  error // why there is no store ($DSH_HOME unresolved)
	// client sends discovery, registration and token requests: not the
	// server's own client, whose configured headers are for the server.
	client *http.Client
	log    *slog.Logger

	// machine is the client_credentials handler, nil for a person's login.
	machine auth.OAuthHandler

	mu sync.Mutex
	// cached is the last token read from the store, with the store
	// file's stamp when it was read.
	cached      *oauth2.Token
	cachedStamp string
	// none: the store held no login for the server at cachedStamp.
	none bool
	// checked is when cachedStamp was last found current: within
	// recheck of it, requests trust the cache without a stat.
	checked time.Time
	recheck time.Duration
	// loggedIn describes the stored login for the status line.
	loggedIn string
	// waiting says why the instance waits for a login, "" when it does
	// not: set by needLogin, cleared when a token is read from the store.
	waiting string
}

var _ auth.OAuthHandler = (*Handler)(nil)

// New returns srv's handler, its tokens in $DSH_HOME/oauth. browser
// returns the browser step a front end allowed (nil: none, and so may
// browser be).
func New(srv Server, browser func() *logins.BrowserStep, logger *slog.Logger) *Handler {
	dir, err := dshhome.Path("oauth")
	var store *tokenstore.Store
	if err == nil {
		store = tokenstore.New(dir)
	}
	return newHandler(srv, store, err, browser, logger)
}

func newHandler(srv Server, store *tokenstore.Store, storeErr error, browser func() *logins.BrowserStep, logger *slog.Logger) *Handler {
	if browser == nil {
		browser = func() *logins.BrowserStep { return nil }
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	h := &Handler{
		serverName: srv.Name,
		browser:    browser,
		serverURL:  remote.Redact(srv.URL),
		oauth:      srv.OAuth,
		store:      store,
		storeErr:   storeErr,
		client:     &http.Client{Transport: base, Timeout: 30 * time.Second},
		log:        logger,
		recheck:    defaultRecheck,
	}
	if srv.OAuth.Grant == GrantClientCredentials {
		h.machine = newMachineHandler(srv.OAuth, h.client)
	}
	return h
}

// Close releases the handler's idle connections.
func (h *Handler) Close() { h.client.CloseIdleConnections() }

// Attach sets h on tr when it is a Streamable HTTP transport, and returns it.
func (h *Handler) Attach(tr mcp.Transport) mcp.Transport {
	if st, ok := tr.(*mcp.StreamableClientTransport); ok {
		st.OAuthHandler = h
	}
	return tr
}

// TokenSource returns the stored token, refreshed when it is about to
// expire, or nil (no Authorization header) when there is none.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if h.machine != nil {
		return h.machine.TokenSource(ctx)
	}
	tok := h.token(ctx, "")
	if tok == nil {
		return nil, nil
	}
	return oauth2.StaticTokenSource(tok), nil
}

// token returns a usable token from the store, nil when there is none.
// rejected is an access token the server refused.
func (h *Handler) token(ctx context.Context, rejected string) *oauth2.Token {
	if h.store == nil {
		return nil
	}
	h.mu.Lock()
	if rejected == "" && time.Since(h.checked) < h.recheck {
		// Every request asks: hashing the path and a stat cost an HTTP
		// call tens of µs, so the file is looked at once per recheck.
		if c := h.cached; c != nil && (c.Expiry.IsZero() || time.Until(c.Expiry) > tokenMargin) {
			h.mu.Unlock()
			return c
		}
		if h.none {
			h.mu.Unlock()
			return nil
		}
	}
	h.mu.Unlock()
	stamp := h.store.Stamp(h.serverURL)
	h.mu.Lock()
	if c := h.cached; c != nil && rejected == "" && stamp == h.cachedStamp &&
		(c.Expiry.IsZero() || time.Until(c.Expiry) > tokenMargin) {
		h.checked = time.Now()
		h.mu.Unlock()
		return c
	}
	if h.none && rejected == "" && stamp == h.cachedStamp {
		// No login, and the file has not changed: a server without OAuth
		// costs each request a stat, not the store's lock and read.
		h.checked = time.Now()
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	rec, err := h.store.Current(ctx, h.serverURL, h.oauth.ClientID, tokenstore.Refresh{
		Rejected: rejected, Margin: tokenMargin, Client: h.client, ClientSecret: h.oauth.ClientSecret,
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if !errors.Is(err, tokenstore.ErrNoToken) {
			// The error quotes the token endpoint's answer, never a token.
			h.log.Warn("mcp-client("+h.serverName+"): stored login unusable", "err", err)
		}
		h.cached, h.loggedIn = nil, ""
		h.none, h.cachedStamp, h.checked = errors.Is(err, tokenstore.ErrNoToken), stamp, time.Now()
		return nil
	}
	h.none, h.checked = false, time.Now()
	h.cached, h.cachedStamp = rec.Token, h.store.Stamp(h.serverURL)
	h.loggedIn, h.waiting = describeLogin(rec), ""
	return rec.Token
}

// describeLogin is the status of a stored login: its scopes and expiry.
func describeLogin(rec tokenstore.Record) string {
	s := "logged in"
	if len(rec.Scopes) > 0 {
		// Sorted: servers and go-sdk give scopes in no fixed order.
		s += " (scopes " + strings.Join(slices.Sorted(slices.Values(rec.Scopes)), " ")
	} else {
		s += " ("
	}
	if !rec.Token.Expiry.IsZero() {
		if len(rec.Scopes) > 0 {
			s += ", "
		}
		s += "token expires " + rec.Token.Expiry.Local().Format("15:04")
	}
	s = strings.TrimSuffix(s, " (")
	if strings.Contains(s, "(") {
		s += ")"
	}
	return s
}

// Status is the login part of the status line, "" for a server that never
// asked for one.
func (h *Handler) Status() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loggedIn
}

// Pending says why the instance waits for a login, "" when it does not.
func (h *Handler) Pending() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting
}

// Authorize handles a 401 or 403 of the server: a refresh or a token
// another process stored is retried at once; a step-up asks again where a
// browser step may run; otherwise a person has to log in
// (*NeedsLoginError).
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	ch := readChallenge(req, resp)
	stepUp := ch.status == http.StatusForbidden && ch.bearerParam("error") == "insufficient_scope"
	if ch.status == http.StatusForbidden && !stepUp {
		return fmt.Errorf("authorization refused: %s", ch.explain())
	}
	if h.machine == nil && !h.oauth.Set() && !ch.bearer() {
		// Not an OAuth server, or not one that says so: a 401 of a
		// server behind some other scheme (a configured header).
		return fmt.Errorf("unauthorized: %s, with no Bearer challenge (WWW-Authenticate) to log in with", ch.explain())
	}
	if h.machine != nil {
		if err := h.machine.Authorize(ctx, ch.req, ch.response()); err != nil {
			return fmt.Errorf("client credentials: %w (%s)", err, ch.explain())
		}
		return nil
	}
	if h.store == nil {
		return fmt.Errorf("%s, and there is no token store: %w", ch.explain(), h.storeErr)
	}
	if !stepUp {
		// A 401 looks at the store whatever the cache says: a login made
		// in another process a moment ago must count.
		h.mu.Lock()
		h.checked = time.Time{}
		h.mu.Unlock()
		if tok := h.token(ctx, sent); tok != nil && tok.AccessToken != sent {
			return nil
		}
	}
	if _, _, err := h.store.Load(h.serverURL, ""); errors.Is(err, tokenstore.ErrCorrupt) {
		return err
	}
	reason := "no stored token"
	if sent != "" {
		reason = "the stored token was refused and could not be refreshed"
	}
	if stepUp {
		reason = "the server asks for more scopes"
		if scope := ch.bearerParam("scope"); scope != "" {
			reason += " (" + scope + ")"
		}
	}
	if b := h.browser(); b != nil && stepUp {
		// A step-up happens during a call, bounded by the call's own
		// timeout; the supervisor is not involved.
		return h.login(ctx, b, ch)
	}
	return &NeedsLoginError{ServerName: h.serverName, Reason: reason + "; " + ch.explain(), challenge: ch}
}

// login runs the authorization code flow for the challenge ch with the
// browser step b, and stores the token.
func (h *Handler) login(ctx context.Context, b *logins.BrowserStep, ch *challenge) error {
	if h.store == nil {
		return fmt.Errorf("no token store: %w", h.storeErr)
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = logins.DefaultLoginTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cb, err := listenCallback(h.oauth.CallbackPort)
	if err != nil {
		return err
	}
	defer cb.close()

	var issuer string
	prev, _, _ := h.store.Load(h.serverURL, h.oauth.ClientID)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: cb.redirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			res, err := cb.await(ctx, b, h.serverName, args.URL)
			if err != nil {
				return nil, err
			}
			issuer = res.Iss
			if issuer == "" {
				issuer = origin(args.URL)
			}
			return res, nil
		},
		ScopeFilter: func(discovered []string) []string {
			asked := discovered
			if len(h.oauth.Scopes) > 0 {
				asked = h.oauth.Scopes
				if ch != nil && ch.status == http.StatusForbidden {
					// A step-up: the scopes the server named (its
					// insufficient_scope challenge) besides those
					// configured, or the new token would lack them again.
					asked = unionScopes(asked, discovered)
				}
			}
			// A step-up keeps what was granted before.
			return unionScopes(prev.Scopes, asked)
		},
		RequestRefreshToken:   true,
		AcceptUnadvertisedIss: true,
		Client:                h.client,
		NewTokenSource: func(_ context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			rec := tokenstore.Record{
				Issuer: issuer, ClientID: oc.ClientID, TokenURL: oc.Endpoint.TokenURL,
				AuthStyle: int(oc.Endpoint.AuthStyle), Scopes: grantedScopes(tok, oc.Scopes), Token: tok,
			}
			if oc.ClientID != h.oauth.ClientID {
				rec.ClientSecret = oc.ClientSecret // a dynamically registered client's
			}
			if err := h.store.Save(h.serverURL, rec); err != nil {
				return nil, err
			}
			return oauth2.StaticTokenSource(tok), nil
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:    "dsh-host",
				RedirectURIs:  []string{cb.redirectURL},
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
				// A native client keeps no secret.
				TokenEndpointAuthMethod: "none",
				Scope:                   strings.Join(h.oauth.Scopes, " "),
			},
		},
	}
	if h.oauth.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.oauth.ClientMetadataURL}
	}
	if h.oauth.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: h.oauth.ClientID}
		if h.oauth.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.oauth.ClientSecret}
		}
	}
	flow, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return fmt.Errorf("login to %s: %w", h.serverName, err)
	}
	err = flow.Authorize(ctx, ch.req, ch.response())
	if err != nil && strings.Contains(err.Error(), "does not match issuer URL") && ch.bearerParam("resource_metadata") == "" {
		// A 2025-03-26 server: no resource metadata, and authorization
		// server metadata at its root that names an issuer of another
		// path, which RFC 8414's check refuses. That spec revision says
		// to use the root's metadata: the listener stands in for the
		// resource metadata the server lacks, naming that issuer, and
		// go-sdk runs the flow again from it.
		var legacy *challenge
		if legacy, err = cb.legacyResourceMetadata(ctx, h.client, ch); err == nil {
			err = flow.Authorize(ctx, legacy.req, legacy.response())
		}
	}
	if err != nil {
		return fmt.Errorf("login to %s: %w", h.serverName, err)
	}
	h.mu.Lock()
	h.cached, h.none, h.checked = nil, false, time.Time{}
	h.mu.Unlock()
	h.token(ctx, "")
	h.log.Info("mcp-client(" + h.serverName + "): logged in")
	return nil
}

// origin is the scheme and host of a URL.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// grantedScopes are the scopes the token response names, else those asked.
func grantedScopes(tok *oauth2.Token, asked []string) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return asked
}

func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// newMachineHandler returns the client_credentials handler of o: extauth's
// for a secret, jwtHandler for a private key.
func newMachineHandler(o Config, client *http.Client) auth.OAuthHandler {
	if o.PrivateKeyFile != "" {
		return &jwtHandler{oauth: o, client: client}
	}
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{
			ClientID:         o.ClientID,
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret},
		},
		HTTPClient: client,
	})
	if err != nil {
		// Validate requires clientId and clientSecret for this grant.
		return failingHandler{err}
	}
	return h
}

// failingHandler answers every Authorize with err.
type failingHandler struct{ err error }

func (f failingHandler) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }
func (f failingHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return f.err
}

// Stamp is the token file's stamp ("" without a store or a file): a
// server that waits for a login looks for a change.
func (h *Handler) Stamp() string {
	if h.store == nil {
		return ""
	}
	return h.store.Stamp(h.serverURL)
}

// Browser returns the browser step a front end allowed, nil when none.
func (h *Handler) Browser() *logins.BrowserStep { return h.browser() }

// LogIn runs the login nl asked for with the browser step b.
func (h *Handler) LogIn(ctx context.Context, b *logins.BrowserStep, nl *NeedsLoginError) error {
	return h.login(ctx, b, nl.challenge)
}

// Wait records why the instance waits for a login (Pending).
func (h *Handler) Wait(why string) {
	h.mu.Lock()
	h.waiting = why
	h.mu.Unlock()
}
