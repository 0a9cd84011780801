package gateway

// Inbound OAuth: the gateway as an OAuth 2.1 protected resource (MCP
// authorization, 2025-06-18 and later). A request carries a bearer access
// token that the issuer named in the entry's auth block signed for the
// gateway (its audience); the gateway checks it, publishes where to get
// one (RFC 9728), and hands who holds it to the tools pipeline as the
// caller's identity. The token itself goes no further: upstream servers
// see the gateway's own credentials only.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// AuthConfig is a gateway entry's auth block: the HTTP listener accepts
// bearer access tokens of Issuer for Audience.
type AuthConfig struct {
	// Issuer is the authorization server's issuer identifier, such as
	// https://login.example.com/realms/team. Required.
	Issuer string `yaml:"issuer"`
	// Audience is the gateway's resource identifier (RFC 8707, RFC 9728):
	// its public URL, such as https://mcp.example.com/mcp. Tokens must
	// name it in aud; clients ask for it as resource. Required.
	Audience string `yaml:"audience"`
	// GroupsClaim names the claim that lists the subject's groups
	// (default "groups"); dots reach into objects (realm_access.roles).
	GroupsClaim string `yaml:"groupsClaim"`
	// JWKSURL is where the issuer publishes its signing keys (default:
	// jwks_uri of the issuer's metadata).
	JWKSURL string `yaml:"jwksUrl"`
	// RequiredScopes must all be granted to a token; one without them is
	// answered 403 insufficient_scope, naming them, so the client steps up.
	RequiredScopes []string `yaml:"requiredScopes"`
	// IntrospectionURL, when set, is the issuer's RFC 7662 endpoint, which
	// explains tokens that are not JWTs (opaque ones). Credentials the
	// endpoint wants go in the URL (https://id:${SECRET}@host/introspect),
	// sent as HTTP Basic authentication.
	IntrospectionURL string `yaml:"introspectionUrl"`
	// Limits are each identity's limits (limits_identity.go).
	Limits IdentityLimits `yaml:"limits"`
}

// DefaultGroupsClaim is the claim read for groups unless groupsClaim says.
const DefaultGroupsClaim = "groups"

// clockSkew is how far exp and nbf may be off from the gateway's clock.
const clockSkew = time.Minute

// Validate checks a, naming the offending key under "auth.".
func (a *AuthConfig) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, host.KeyErrorf("auth."+key, format, args...))
	}
	if a.Issuer == "" {
		bad("issuer", "required: the issuer identifier of your authorization server, such as https://login.example.com/realms/team")
	} else if err := checkURL(a.Issuer, false); err != nil {
		bad("issuer", "%q: %v", a.Issuer, err)
	}
	if a.Audience == "" {
		bad("audience", "required: the gateway's public URL, such as https://mcp.example.com/mcp, which tokens must name in aud")
	} else if err := checkURL(a.Audience, true); err != nil {
		bad("audience", "%q: %v; it is the gateway's resource identifier (RFC 8707), its public URL", a.Audience, err)
	}
	if a.JWKSURL != "" {
		if err := checkURL(a.JWKSURL, false); err != nil {
			bad("jwksUrl", "%q: %v", a.JWKSURL, err)
		}
	}
	if a.IntrospectionURL != "" {
		if err := checkURL(a.IntrospectionURL, false); err != nil {
			bad("introspectionUrl", "%q: %v", a.IntrospectionURL, err)
		}
	}
	for i, s := range a.RequiredScopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			bad(fmt.Sprintf("requiredScopes[%d]", i), "%q must be one scope token, without spaces or quotes", s)
		}
	}
	if a.GroupsClaim != "" && slices.Contains(strings.Split(a.GroupsClaim, "."), "") {
		bad("groupsClaim", "%q: want a claim name, or names joined by dots for a nested claim (realm_access.roles)", a.GroupsClaim)
	}
	if err := a.Limits.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute https URL, or http on a loopback host
// (a test or a local issuer); fragment-free, as RFC 8707 wants for a
// resource when resource is set.
func checkURL(raw string, resource bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return errors.New("want an absolute https URL")
	case u.Scheme == "http" && !isLoopbackHost(u.Hostname()):
		return errors.New("want https (http only on a loopback host)")
	case resource && u.Fragment != "":
		return errors.New("a resource identifier has no fragment")
	}
	return nil
}

// authenticator checks the bearer tokens of the HTTP listener: the static
// token (one person's) and the issuer's access tokens.
type authenticator struct {
	cfg         AuthConfig
	groupsClaim []string
	static      []byte // the entry's static token, "" when none
	// staticInfo is the identity-less holder of the static token.
	staticInfo *auth.TokenInfo
	client     *http.Client
	keys       *keySet
	introspect *introspector
	// metadataURL is the gateway's RFC 9728 document, named in every
	// challenge.
	metadataURL string
	metadata    *oauthex.ProtectedResourceMetadata
	limits      *identityLimits
	now         func() time.Time
	// verified remembers the JWTs checked already (verifiedCache).
	verified verifiedCache
}

// authTimeout bounds each request to the issuer (metadata, JWKS,
// introspection).
const authTimeout = 10 * time.Second

// newAuthenticator returns the checks of cfg; static is the entry's token
// ("" for none). Close releases its connections to the issuer.
func newAuthenticator(cfg AuthConfig, static string) *authenticator {
	claim := cfg.GroupsClaim
	if claim == "" {
		claim = DefaultGroupsClaim
	}
	a := &authenticator{
		cfg:         cfg,
		groupsClaim: strings.Split(claim, "."),
		static:      []byte(static),
		staticInfo:  newStaticInfo(),
		client:      &http.Client{Timeout: authTimeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}},
		metadataURL: resourceMetadataURL(cfg.Audience),
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               cfg.Audience,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.RequiredScopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "dsh-host gateway",
		},
		limits: newIdentityLimits(cfg.Limits),
		now:    time.Now,
	}
	a.keys = &keySet{a: a, url: cfg.JWKSURL, minRefetch: jwksMinRefetch, maxAge: jwksMaxAge}
	if cfg.IntrospectionURL != "" {
		a.introspect = &introspector{a: a, cache: map[[32]byte]introspected{}}
	}
	return a
}

// Close closes the idle connections to the issuer.
func (a *authenticator) Close() error {
	a.client.CloseIdleConnections()
	return nil
}

// resourceMetadataURL is where RFC 9728 §3.1 puts the metadata of the
// resource: the well-known path inserted between its host and its path.
func resourceMetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(u.Path, "/")
	return u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + path
}

// routes serves the gateway's RFC 9728 document, at the path its
// resource identifier gives and at the root one, without authentication:
// clients read it to learn where to log in.
func (a *authenticator) routes(mux *http.ServeMux) {
	h := auth.ProtectedResourceMetadataHandler(a.metadata)
	mux.Handle("/.well-known/oauth-protected-resource", h)
	if u, err := url.Parse(a.metadataURL); err == nil && u.Path != "/.well-known/oauth-protected-resource" {
		mux.Handle(u.Path, h)
	}
}

// authError is a refused token: the status and RFC 6750 error code its
// challenge carries.
type authError struct {
	status int
	code   string // invalid_token, insufficient_scope; "" when no token was sent
	desc   string
}

func (e *authError) Error() string { return e.desc }

func invalid(format string, args ...any) *authError {
	return &authError{status: http.StatusUnauthorized, code: "invalid_token", desc: fmt.Sprintf(format, args...)}
}

// unavailable is an issuer that cannot be asked: the token is not known
// bad, so the client is told to retry, not to log in again.
func unavailable(err error) *authError {
	return &authError{status: http.StatusServiceUnavailable, desc: "the gateway cannot check tokens now: its issuer does not answer (" + err.Error() + "); retry later"}
}

// challenge answers a refusal with its WWW-Authenticate challenge, which
// names the gateway's metadata (where clients discover the issuer), the
// scopes it needs, and the error.
func (a *authenticator) challenge(w http.ResponseWriter, e *authError) {
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "Service Unavailable: "+e.desc, e.status)
		return
	}
	params := []string{fmt.Sprintf("resource_metadata=%q", a.metadataURL)}
	if len(a.cfg.RequiredScopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(a.cfg.RequiredScopes, " ")))
	}
	if e.code != "" {
		params = append(params, fmt.Sprintf("error=%q", e.code), fmt.Sprintf("error_description=%q", strings.ReplaceAll(e.desc, `"`, "'")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	// A refused client has no use for the connection.
	w.Header().Set("Connection", "close")
	http.Error(w, http.StatusText(e.status)+": "+e.desc, e.status)
}

// authenticate checks r's bearer token: the static token, or one of the
// issuer's. The token's information is what go-sdk keeps per request
// (RequestExtra.TokenInfo) and per session (a session is its opener's).
func (a *authenticator) authenticate(r *http.Request) (*auth.TokenInfo, *authError) {
	raw, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, &authError{status: http.StatusUnauthorized, desc: "send Authorization: Bearer <access token>; the gateway's metadata (resource_metadata) names the issuer to log in with"}
	}
	if len(a.static) > 0 && subtle.ConstantTimeCompare([]byte(raw), a.static) == 1 {
		return a.staticInfo, nil
	}
	info := a.verified.get(raw, a.now())
	if info == nil {
		var (
			claims map[string]any
			e      *authError
		)
		if strings.Count(raw, ".") == 2 {
			claims, e = a.verifyJWT(r.Context(), raw)
		} else if a.introspect != nil {
			claims, e = a.introspect.check(r.Context(), raw)
		} else {
			e = invalid("not a JWT access token, and the gateway has no introspectionUrl to ask about opaque ones")
		}
		if e != nil {
			return nil, e
		}
		if info, e = a.tokenInfo(claims); e != nil {
			return nil, e
		}
		if strings.Count(raw, ".") == 2 {
			a.verified.put(raw, info)
		}
	}
	for _, s := range a.cfg.RequiredScopes {
		if !slices.Contains(info.Scopes, s) {
			return nil, &authError{status: http.StatusForbidden, code: "insufficient_scope",
				desc: "the token lacks scope " + s + "; log in again asking for " + strings.Join(a.cfg.RequiredScopes, " ")}
		}
	}
	return info, nil
}

// allowedAlgs are the signatures a token may carry: asymmetric only. alg
// none, and HS* (whose key would be a secret the gateway shares with the
// issuer, or, worse, the public key taken as an HMAC secret), are refused
// before any key is looked at.
func allowedAlgs() []jose.SignatureAlgorithm {
	return []jose.SignatureAlgorithm{
		jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
		jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
	}
}

// verifyJWT checks raw's signature with the issuer's keys, then its iss,
// aud, exp and nbf, and returns its claims.
func (a *authenticator) verifyJWT(ctx context.Context, raw string) (map[string]any, *authError) {
	tok, err := jwt.ParseSigned(raw, allowedAlgs())
	if err != nil {
		return nil, invalid("not a JWT signed with an asymmetric algorithm: %v", err)
	}
	h := tok.Headers[0]
	keys, e := a.keys.lookup(ctx, h.KeyID)
	if e != nil {
		return nil, e
	}
	var (
		std    jwt.Claims
		claims map[string]any
		sigErr error
	)
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if sigErr = tok.Claims(k, &std, &claims); sigErr == nil {
			break
		}
	}
	if claims == nil {
		if sigErr == nil {
			sigErr = fmt.Errorf("no key of the issuer for alg %s", h.Algorithm)
		}
		return nil, invalid("signature not valid: %v", sigErr)
	}
	if std.Expiry == nil {
		return nil, invalid("the token has no exp")
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: a.cfg.Issuer, AnyAudience: jwt.Audience{a.cfg.Audience}, Time: a.now()}, clockSkew)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, invalid("issued by %q, not by %q", std.Issuer, a.cfg.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("issued for %q, not for this gateway (%s): ask for resource=%s", []string(std.Audience), a.cfg.Audience, a.cfg.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return nil, invalid("expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
	case err != nil:
		return nil, invalid("%v", err)
	}
	return claims, nil
}

// identityKey is where TokenInfo.Extra holds the caller's identity.
const identityKey = "dsh-host/identity"

// tokenInfo returns what go-sdk and the tools pipeline keep of a token's
// claims: the subject (also the session's owner), client, scopes, groups
// and expiry.
func (a *authenticator) tokenInfo(claims map[string]any) (*auth.TokenInfo, *authError) {
	id := &tools.Identity{Subject: str(claims["sub"])}
	for _, k := range []string{"client_id", "azp", "cid"} {
		if id.Client = str(claims[k]); id.Client != "" {
			break
		}
	}
	if id.Subject == "" {
		return nil, invalid("the token has no sub")
	}
	if s := str(claims["scope"]); s != "" {
		id.Scopes = strings.Fields(s)
	} else {
		id.Scopes = strs(claims["scp"])
	}
	var v any = claims
	for _, part := range a.groupsClaim {
		m, _ := v.(map[string]any)
		v = m[part]
	}
	id.Groups = claimList(v)
	info := &auth.TokenInfo{Scopes: id.Scopes, UserID: "sub:" + id.Subject, Extra: map[string]any{identityKey: id}}
	if exp, ok := claims["exp"].(float64); ok {
		info.Expiration = time.Unix(int64(exp), 0)
	}
	return info, nil
}

func str(v any) string { s, _ := v.(string); return s }

// claimList reads a claim that is a list of values, which JWT lets a
// single value stand for (aud, groups): a string is one item, spaces and
// all ("Platform Team" is one group).
func claimList(v any) []string {
	if s, ok := v.(string); ok {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	return strs(v)
}

// strs reads a claim that lists strings: an array, or one string whose
// words are the items (as some issuers write scp).
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// identityOf returns the identity a request's token carries, nil for a
// request without one (stdio, the static token, no auth block).
func identityOf(req mcp.Request) *tools.Identity {
	if req == nil {
		return nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	id, _ := extra.TokenInfo.Extra[identityKey].(*tools.Identity)
	return id
}

// callerOf is the gateway's caller with the identity of req's token.
func (g *Gateway) callerOf(req mcp.Request) tools.Caller {
	c := g.caller
	c.Identity = identityOf(req)
	c.Auth = authOf(req, c.Identity)
	return c
}

// tokenInfoKey carries a checked token's information from requireAuth to
// go-sdk's bearer middleware.
type tokenInfoKey struct{}

// requireAuth answers a request without a valid token with its challenge
// (401, or 403 insufficient_scope), refuses one past its identity's rate
// or session limits with 429, and hands the token's information to go-sdk
// (auth.RequireBearerToken puts it where go-sdk's handler reads it: each
// request's RequestExtra.TokenInfo, and a session's owner, so that another
// identity's request on that session is refused with 403).
func (a *authenticator) requireAuth(g *Gateway, next http.Handler) http.Handler {
	inner := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		info, _ := ctx.Value(tokenInfoKey{}).(*auth.TokenInfo)
		if info == nil {
			return nil, auth.ErrInvalidToken
		}
		return info, nil
	}, &auth.RequireBearerTokenOptions{ResourceMetadataURL: a.metadataURL, AllowMissingExpiration: true, ClockSkew: clockSkew})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, e := a.authenticate(r)
		if e != nil {
			a.challenge(w, e)
			return
		}
		if refusal := a.limits.admit(g, r, info); refusal != nil {
			w.Header().Set("Retry-After", strconv.Itoa(refusal.retryAfter))
			http.Error(w, "Too Many Requests: "+refusal.msg, http.StatusTooManyRequests)
			return
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenInfoKey{}, info)))
	})
}

// keySet is the issuer's JWKS, fetched at the first token, kept for
// maxAge, and fetched again at once for a key id it does not hold (the
// issuer rotated its keys), at most once per minRefetch, so that tokens
// with made-up key ids cannot make the gateway hammer the issuer.
type keySet struct {
	a          *authenticator
	minRefetch time.Duration
	maxAge     time.Duration

	cur atomic.Pointer[jwks]
	mu  sync.Mutex // serializes fetches; guards what follows
	url string     // the JWKS's URL, discovered at the first fetch unless configured
	// tried is when the last fetch began, lastErr how it failed.
	tried   time.Time
	lastErr error
}

// The JWKS's refetch interval for an unknown key id, and its lifetime.
const (
	jwksMinRefetch = 10 * time.Second
	jwksMaxAge     = time.Hour
)

// jwks is one fetch of the key set.
type jwks struct {
	byID map[string][]jose.JSONWebKey
	all  []jose.JSONWebKey
	at   time.Time
}

func (k *jwks) find(kid string) []jose.JSONWebKey {
	if k == nil {
		return nil
	}
	if kid == "" {
		return k.all
	}
	return k.byID[kid]
}

// lookup returns the signing keys of id ("" for a token that names none:
// every key is tried).
func (k *keySet) lookup(ctx context.Context, id string) ([]jose.JSONWebKey, *authError) {
	now := k.a.now()
	if cur := k.cur.Load(); cur != nil && now.Sub(cur.at) < k.maxAge {
		if keys := cur.find(id); keys != nil {
			return keys, nil
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// Another request may have fetched meanwhile.
	cur := k.cur.Load()
	keys := cur.find(id)
	if keys != nil && now.Sub(cur.at) < k.maxAge {
		return keys, nil
	}
	if k.tried.IsZero() || now.Sub(k.tried) >= k.minRefetch {
		k.tried = now
		next, err := k.fetch(ctx)
		k.lastErr = err
		if err == nil {
			k.cur.Store(next)
			cur, keys = next, next.find(id)
		}
	}
	switch {
	case keys != nil:
		// Stale keys, when the issuer does not answer, are better than none.
		return keys, nil
	case cur == nil:
		return nil, unavailable(k.lastErr)
	}
	return nil, invalid("signed with key %q, which the issuer does not publish", id)
}

// fetch reads the JWKS, from its URL or the one the issuer's metadata
// names. The caller holds mu.
func (k *keySet) fetch(ctx context.Context) (*jwks, error) {
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	if k.url == "" {
		meta, err := k.a.issuerMetadata(ctx)
		if err != nil {
			return nil, err
		}
		if meta.JWKSURI == "" {
			return nil, fmt.Errorf("the metadata of %s names no jwks_uri; set auth.jwksUrl", k.a.cfg.Issuer)
		}
		k.url = meta.JWKSURI
	}
	var set jose.JSONWebKeySet
	if err := k.a.getJSON(ctx, k.url, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	out := &jwks{byID: map[string][]jose.JSONWebKey{}, at: k.a.now()}
	for _, key := range set.Keys {
		if key.Use == "enc" || !key.Valid() || !key.IsPublic() {
			continue
		}
		out.all = append(out.all, key)
		out.byID[key.KeyID] = append(out.byID[key.KeyID], key)
	}
	return out, nil
}

// issuerMeta is what the gateway reads of the issuer's metadata.
type issuerMeta struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// issuerMetadata reads the issuer's RFC 8414 metadata, or its OpenID
// Connect discovery document when it has none, and checks that it is the
// issuer's own (RFC 8414 §3.3).
func (a *authenticator) issuerMetadata(ctx context.Context) (*issuerMeta, error) {
	u, err := url.Parse(a.cfg.Issuer)
	if err != nil {
		return nil, err
	}
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(a.cfg.Issuer, "/") + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		var m issuerMeta
		if err := a.getJSON(ctx, c, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != a.cfg.Issuer {
			return nil, fmt.Errorf("%s names issuer %q, not %q: check auth.issuer", c, m.Issuer, a.cfg.Issuer)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("no metadata for issuer %s: %w", a.cfg.Issuer, errors.Join(errs...))
}

// maxIssuerDoc bounds a document read from the issuer.
const maxIssuerDoc = 1 << 20

func (a *authenticator) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	return a.do(req, v)
}

func (a *authenticator) do(req *http.Request, v any) error {
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxIssuerDoc))
		return fmt.Errorf("%s %s: %s", req.Method, redact(req.URL), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxIssuerDoc)).Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, redact(req.URL), err)
	}
	return nil
}

// redact is u without its credentials, for messages.
func redact(u *url.URL) string { return u.Redacted() }

// introspector asks the issuer what an opaque token stands for (RFC 7662),
// and remembers an active answer for a little while: one introspection
// per token per introspectionTTL, not one per request.
type introspector struct {
	a     *authenticator
	mu    sync.Mutex
	cache map[[32]byte]introspected
}

type introspected struct {
	claims map[string]any
	until  time.Time
}

// Introspection cache bounds.
const (
	introspectionTTL     = 30 * time.Second
	introspectionEntries = 4096
)

func (in *introspector) check(ctx context.Context, raw string) (map[string]any, *authError) {
	key := sha256.Sum256([]byte(raw))
	now := in.a.now()
	in.mu.Lock()
	c, ok := in.cache[key]
	in.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.claims, nil
	}
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.a.cfg.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, unavailable(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var claims map[string]any
	if err := in.a.do(req, &claims); err != nil {
		return nil, unavailable(err)
	}
	if active, _ := claims["active"].(bool); !active {
		return nil, invalid("the issuer says the token is not active")
	}
	// RFC 7662 makes iss and aud optional, but an answer without them
	// cannot say the token is this gateway's: one issued for another
	// resource server of the same issuer is active too (RFC 9068 §4).
	switch iss, _ := claims["iss"].(string); {
	case iss == "":
		return nil, invalid("the issuer's introspection answer names no iss; the gateway accepts only tokens it can tell are issued by %q", in.a.cfg.Issuer)
	case iss != in.a.cfg.Issuer:
		return nil, invalid("issued by %q, not by %q", iss, in.a.cfg.Issuer)
	}
	switch aud := claimList(claims["aud"]); {
	case len(aud) == 0:
		return nil, invalid("the issuer's introspection answer names no aud; ask for a token with resource=%s", in.a.cfg.Audience)
	case !slices.Contains(aud, in.a.cfg.Audience):
		return nil, invalid("issued for %q, not for this gateway (%s): ask for resource=%s", aud, in.a.cfg.Audience, in.a.cfg.Audience)
	}
	until := now.Add(introspectionTTL)
	if exp, ok := claims["exp"].(float64); ok {
		t := time.Unix(int64(exp), 0)
		if now.After(t.Add(clockSkew)) {
			return nil, invalid("expired at %s", t.UTC().Format(time.RFC3339))
		}
		if t.Before(until) {
			until = t
		}
	}
	if nbf, ok := claims["nbf"].(float64); ok && now.Add(clockSkew).Before(time.Unix(int64(nbf), 0)) {
		return nil, invalid("not valid before %s", time.Unix(int64(nbf), 0).UTC().Format(time.RFC3339))
	}
	in.mu.Lock()
	if len(in.cache) >= introspectionEntries {
		clear(in.cache)
	}
	in.cache[key] = introspected{claims: claims, until: until}
	in.mu.Unlock()
	return claims, nil
}

// verifiedCache remembers the JWTs verified already, until they expire:
// a client sends its token with every request, and checking a signature
// again each time (65 µs for RS256) cost the gateway 16% of its calls per
// second. A JWT cannot be revoked before its exp anyway; the entry goes
// with its exp (and its skew), as the token would.
type verifiedCache struct {
	mu sync.Mutex
	m  map[[32]byte]*auth.TokenInfo
}

// verifiedEntries bounds the cache; it is emptied when full.
const verifiedEntries = 4096

func (c *verifiedCache) get(raw string, now time.Time) *auth.TokenInfo {
	key := sha256.Sum256([]byte(raw))
	c.mu.Lock()
	info := c.m[key]
	if info != nil && now.After(info.Expiration.Add(clockSkew)) {
		delete(c.m, key)
		info = nil
	}
	c.mu.Unlock()
	return info
}

func (c *verifiedCache) put(raw string, info *auth.TokenInfo) {
	if info.Expiration.IsZero() {
		return
	}
	key := sha256.Sum256([]byte(raw))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= verifiedEntries {
		c.m = map[[32]byte]*auth.TokenInfo{}
	}
	c.m[key] = info
}
