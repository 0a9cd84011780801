package bearer

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options are a Verifier's settings besides its Config.
type Options struct {
	// StaticToken is the gateway's own token (one person's), accepted
	// beside the issuer's as StaticInfo; "" for none.
	StaticToken string
	// Now is the clock (tests move it); nil is time.Now.
	Now func() time.Time
}

// Verifier checks the bearer tokens of a listener: the static token and
// the issuer's access tokens. It is safe for concurrent use.
type Verifier struct {
	cfg         Config
	groupsClaim []string
	static      []byte
	staticInfo  *auth.TokenInfo
	client      *http.Client
	keys        *keySet
	introspect  *introspector
	// metadataURL is the gateway's RFC 9728 document, named in every
	// challenge.
	metadataURL string
	metadata    *oauthex.ProtectedResourceMetadata
	now         func() time.Time
	// verified remembers the JWTs checked already (verifiedCache).
	verified verifiedCache
}

// requestTimeout bounds each request to the issuer (metadata, JWKS,
// introspection).
const requestTimeout = 10 * time.Second

// New returns the checks of cfg, which Validate accepted. Close releases
// its connections to the issuer.
func New(cfg Config, opts Options) *Verifier {
	claim := cfg.GroupsClaim
	if claim == "" {
		claim = DefaultGroupsClaim
	}
	v := &Verifier{
		cfg:         cfg,
		groupsClaim: strings.Split(claim, "."),
		static:      []byte(opts.StaticToken),
		staticInfo:  StaticInfo(),
		client:      &http.Client{Timeout: requestTimeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}},
		metadataURL: ResourceMetadataURL(cfg.Audience),
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               cfg.Audience,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.RequiredScopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "dsh-host gateway",
		},
		now: opts.Now,
	}
	if v.now == nil {
		v.now = time.Now
	}
	v.keys = &keySet{v: v, url: cfg.JWKSURL, minRefetch: JWKSMinRefetch, maxAge: jwksMaxAge}
	if cfg.IntrospectionURL != "" {
		v.introspect = &introspector{v: v, cache: map[[32]byte]introspected{}}
	}
	return v
}

// Close closes the idle connections to the issuer.
func (v *Verifier) Close() error {
	v.client.CloseIdleConnections()
	return nil
}

// MetadataURL is the URL of the gateway's RFC 9728 document.
func (v *Verifier) MetadataURL() string { return v.metadataURL }

// Routes serves the gateway's RFC 9728 document, at the path its
// resource identifier gives and at the root one, without authentication:
// clients read it to learn where to log in.
func (v *Verifier) Routes(mux *http.ServeMux) {
	h := auth.ProtectedResourceMetadataHandler(v.metadata)
	mux.Handle("/.well-known/oauth-protected-resource", h)
	if u, err := url.Parse(v.metadataURL); err == nil && u.Path != "/.well-known/oauth-protected-resource" {
		mux.Handle(u.Path, h)
	}
}

// Error is a refused token: the HTTP status and RFC 6750 error code its
// challenge carries.
type Error struct {
	Status int
	// Code is invalid_token or insufficient_scope; "" when no token was
	// sent (RFC 6750 §3.1), or for 503 (the issuer does not answer).
	Code        string
	Description string
}

func (e *Error) Error() string { return e.Description }

func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Description: fmt.Sprintf(format, args...)}
}

// unavailable is an issuer that cannot be asked: the token is not known
// bad, so the client is told to retry, not to log in again.
func unavailable(err error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Description: "the gateway cannot check tokens now: its issuer does not answer (" + err.Error() + "); retry later"}
}

// Challenge answers a refusal with its WWW-Authenticate challenge, which
// names the gateway's metadata (where clients discover the issuer), the
// scopes it needs, and the error.
func (v *Verifier) Challenge(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "Service Unavailable: "+e.Description, e.Status)
		return
	}
	params := []string{fmt.Sprintf("resource_metadata=%q", v.metadataURL)}
	if len(v.cfg.RequiredScopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(v.cfg.RequiredScopes, " ")))
	}
	if e.Code != "" {
		params = append(params, fmt.Sprintf("error=%q", e.Code), fmt.Sprintf("error_description=%q", strings.ReplaceAll(e.Description, `"`, "'")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	// A refused client has no use for the connection.
	w.Header().Set("Connection", "close")
	http.Error(w, http.StatusText(e.Status)+": "+e.Description, e.Status)
}

// Authenticate checks r's bearer token: the static token, or one of the
// issuer's. The token's information is what go-sdk keeps per request
// (RequestExtra.TokenInfo) and per session (a session is its opener's).
func (v *Verifier) Authenticate(r *http.Request) (*auth.TokenInfo, *Error) {
	raw, ok := Token(r.Header.Get("Authorization"))
	if !ok {
		return nil, &Error{Status: http.StatusUnauthorized, Description: "send Authorization: Bearer <access token>; the gateway's metadata (resource_metadata) names the issuer to log in with"}
	}
	if len(v.static) > 0 && subtle.ConstantTimeCompare([]byte(raw), v.static) == 1 {
		return v.staticInfo, nil
	}
	jwt := strings.Count(raw, ".") == 2
	info := v.verified.get(raw, v.now())
	if info == nil {
		var (
			claims map[string]any
			e      *Error
		)
		switch {
		case jwt:
			claims, e = v.verifyJWT(r.Context(), raw)
		case v.introspect != nil:
			claims, e = v.introspect.check(r.Context(), raw)
		default:
			e = invalid("not a JWT access token, and the gateway has no introspectionUrl to ask about opaque ones")
		}
		if e != nil {
			return nil, e
		}
		if info, e = v.tokenInfo(claims); e != nil {
			return nil, e
		}
		if jwt {
			v.verified.put(raw, info)
		}
	}
	for _, s := range v.cfg.RequiredScopes {
		if !slices.Contains(info.Scopes, s) {
			return nil, &Error{Status: http.StatusForbidden, Code: "insufficient_scope",
				Description: "the token lacks scope " + s + "; log in again asking for " + strings.Join(v.cfg.RequiredScopes, " ")}
		}
	}
	return info, nil
}
