package mcpclient

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
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/tokenstore"
)

// OAuth for remote servers. go-sdk's transport asks an auth.OAuthHandler
// for the token of each request, and calls its Authorize on a 401 or 403;
// oauthHandler is that handler. It keeps tokens in the token store
// (internal/tokenstore), refreshes them there, and leaves the whole
// authorization code flow (discovery, registration, PKCE, resource, state
// and iss) to go-sdk's auth.AuthorizationCodeHandler, and client
// credentials to auth/extauth (a private-key JWT client is signed here,
// oauth_jwt.go: extauth takes a secret only).
//
// The browser step never runs inside a connection attempt, which is
// bounded by startupTimeoutMs: Authorize answers *NeedsLoginError, and the
// supervisor either runs the login itself (where a front end allowed the
// browser step, AllowBrowserStep) or shows `needs login` and waits for a
// token to appear in the store.

// tokenMargin is how long before its expiry an access token is refreshed.
const tokenMargin = time.Minute

// DefaultLoginTimeout bounds one browser step.
const DefaultLoginTimeout = 5 * time.Minute

// maxChallengeBody caps what of a 401/403 body an error quotes.
const maxChallengeBody = 1 << 10

// BrowserStep lets a login run in this process: a front end where a person
// or a script drives the command (run, login, tools, call, prompt, command)
// allows it; `serve` does not, and its servers that need a login wait for
// one made elsewhere.
type BrowserStep struct {
	// Out receives the authorization URL and what the login is waiting
	// for; nil discards them.
	Out io.Writer
	// Open opens the authorization URL. Nil runs $BROWSER with the URL as
	// its last argument when it is set, else the platform's opener; when
	// neither runs, the printed URL is all there is.
	Open func(ctx context.Context, url string) error
	// Timeout bounds one login (default DefaultLoginTimeout).
	Timeout time.Duration
}

var browserStep atomic.Pointer[BrowserStep]

// AllowBrowserStep lets logins run in this process with b (nil forbids
// them again) and returns a func that restores the previous setting.
func AllowBrowserStep(b *BrowserStep) (restore func()) {
	old := browserStep.Swap(b)
	return func() { browserStep.Store(old) }
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

// oauthHandler is one instance's auth.OAuthHandler. It lives as long as
// the instance, across connections.
type oauthHandler struct {
	serverName string
	// serverURL keys the store: the configured URL with its secrets
	// redacted (redactURL), so none lands in the token file.
	serverURL string
	oauth     OAuth
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
	// stampRecheck of it, requests trust the cache without a stat.
	checked time.Time
	// loggedIn describes the stored login for the status line.
	loggedIn string
	// waiting says why the instance waits for a login, "" when it does
	// not: set by needLogin, cleared when a token is read from the store.
	waiting string
}

var _ auth.OAuthHandler = (*oauthHandler)(nil)

// newOAuthHandler returns cfg's handler. The store is $DSH_HOME/oauth.
func newOAuthHandler(cfg *Config, logger *slog.Logger) *oauthHandler {
	dir, err := dshhome.Path("oauth")
	var store *tokenstore.Store
	if err == nil {
		store = tokenstore.New(dir)
	}
	return newOAuthHandlerWith(cfg, store, err, logger)
}

func newOAuthHandlerWith(cfg *Config, store *tokenstore.Store, storeErr error, logger *slog.Logger) *oauthHandler {
	base := http.DefaultTransport.(*http.Transport).Clone()
	h := &oauthHandler{
		serverName: cfg.ServerName,
		serverURL:  remote.Redact(cfg.URL),
		oauth:      cfg.OAuth,
		store:      store,
		storeErr:   storeErr,
		client:     &http.Client{Transport: base, Timeout: 30 * time.Second},
		log:        logger,
	}
	if cfg.OAuth.Grant == GrantClientCredentials {
		h.machine = newMachineHandler(cfg.OAuth, h.client)
	}
	return h
}

// close releases the handler's idle connections.
func (h *oauthHandler) close() { h.client.CloseIdleConnections() }

// wrap returns f with h set on every Streamable HTTP transport it makes.
func (h *oauthHandler) wrap(f transportFactory) transportFactory {
	return func() mcp.Transport {
		t := f()
		if st, ok := t.(*mcp.StreamableClientTransport); ok {
			st.OAuthHandler = h
		}
		return t
	}
}

// TokenSource returns the stored token, refreshed when it is about to
// expire, or nil (no Authorization header) when there is none.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
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
func (h *oauthHandler) token(ctx context.Context, rejected string) *oauth2.Token {
	if h.store == nil {
		return nil
	}
	h.mu.Lock()
	if rejected == "" && time.Since(h.checked) < stampRecheck {
		// Every request asks: hashing the path and a stat cost an HTTP
		// call tens of µs, so the file is looked at once per stampRecheck.
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

// stampRecheck is how long a request trusts the cached login (or its
// absence) without looking at the token file; a variable for tests.
var stampRecheck = time.Second

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

// status is the login part of the status line, "" for a server that never
// asked for one.
func (h *oauthHandler) status() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loggedIn
}

// pending says why the instance waits for a login, "" when it does not.
func (h *oauthHandler) pending() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting
}

// Authorize handles a 401 or 403 of the server: a refresh or a token
// another process stored is retried at once; a step-up asks again where a
// browser step may run; otherwise a person has to log in
// (*NeedsLoginError).
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	ch := readChallenge(req, resp)
	stepUp := ch.status == http.StatusForbidden && ch.bearerParam("error") == "insufficient_scope"
	if ch.status == http.StatusForbidden && !stepUp {
		return fmt.Errorf("authorization refused: %s", ch.explain())
	}
	if h.machine == nil && !h.oauth.set() && !ch.bearer() {
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
	if b := browserStep.Load(); b != nil && stepUp {
		// A step-up happens during a call, bounded by the call's own
		// timeout; the supervisor is not involved.
		return h.login(ctx, b, ch)
	}
	return &NeedsLoginError{ServerName: h.serverName, Reason: reason + "; " + ch.explain(), challenge: ch}
}

// login runs the authorization code flow for the challenge ch with the
// browser step b, and stores the token.
func (h *oauthHandler) login(ctx context.Context, b *BrowserStep, ch *challenge) error {
	if h.store == nil {
		return fmt.Errorf("no token store: %w", h.storeErr)
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultLoginTimeout
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
func newMachineHandler(o OAuth, client *http.Client) auth.OAuthHandler {
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

// loginPoll is how often a server that needs a login looks for a token in
// the store (a stat of one file).
const loginPoll = time.Second

// stamp is the token file's stamp ("" without a store or a file).
func (h *oauthHandler) stamp() string {
	if h.store == nil {
		return ""
	}
	return h.store.Stamp(h.serverURL)
}

// needLogin handles a server that asked for a person's login. Where a
// front end allows the browser step, the login runs here, once per
// outage, and a connection attempt follows. Otherwise, or when the login
// fails, the server shows as needing a login, with no tools, and other
// servers go on; it connects by itself once a token lands in the store
// (`dsh-host login` in another process).
func (c *client) needLogin(ctx context.Context, first bool, nl *NeedsLoginError) {
	var loginErr error
	if b := browserStep.Load(); b != nil && !c.loginTried {
		c.loginTried = true
		c.setState("waiting for the login in the browser", "the server waits for a login in the browser")
		err := c.opt.oauth.login(ctx, b, nl.challenge)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			c.needsLogin = false
			c.attempt(ctx, first)
			return
		}
		c.log.Warn(c.label+": login failed", "err", err)
		loginErr = err
	}
	c.setInstructions("")
	c.unregisterAll()
	if !c.needsLogin {
		c.log.Warn(c.label + ": " + nl.Error())
	}
	c.needsLogin = true
	c.loginStamp = c.opt.oauth.stamp()
	detail := "needs login — run: dsh-host login " + c.cfg.ServerName
	if loginErr != nil {
		detail += " (the login failed: " + loginErr.Error() + ")"
	}
	c.opt.oauth.mu.Lock()
	c.opt.oauth.waiting = detail
	c.opt.oauth.mu.Unlock()
	// Calls say why, the server's own explanation included.
	c.setState(detail, nl.Error())
	c.timer = time.NewTimer(loginPoll)
}

// hasHeader reports whether headers set name (any case): a configured
// Authorization header is the user's choice of credential, and no OAuth
// login replaces it.
func hasHeader(headers map[string]string, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
