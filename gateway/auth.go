package gateway

// Inbound OAuth: the gateway as an OAuth 2.1 protected resource. The
// checks of a token are package bearer's, each identity's limits package
// limits'; this file joins them to the listener and to go-sdk.

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/gateway/limits"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// AuthConfig is a gateway entry's auth block: the HTTP listener accepts
// bearer access tokens of Issuer for Audience (bearer.Config), and holds
// each identity to Limits.
type AuthConfig struct {
	bearer.Config `yaml:",inline"`
	// Limits are each identity's limits (package limits).
	Limits limits.Config `yaml:"limits"`
}

// DefaultGroupsClaim is the claim read for groups unless groupsClaim says.
const DefaultGroupsClaim = bearer.DefaultGroupsClaim

// Validate checks a, naming the offending key under "auth.".
func (a *AuthConfig) Validate() error {
	return errors.Join(underKey("auth.", a.Config.Validate()), underKey("auth.limits.", a.Limits.Validate()))
}

// underKey puts the keys of err's *host.KeyErrors under prefix.
func underKey(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		errs = multi.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var ke *host.KeyError
		if errors.As(e, &ke) {
			e = &host.KeyError{Key: prefix + ke.Key, Err: ke.Err}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// identityOf returns the identity a request's token carries, nil for a
// request without one (stdio, the static token, no auth block).
func identityOf(req mcp.Request) *tools.Identity {
	if req == nil {
		return nil
	}
	extra := req.GetExtra()
	if extra == nil {
		return nil
	}
	return bearer.IdentityOf(extra.TokenInfo)
}

// callerOf is the gateway's caller with the identity of req's token.
func (g *Gateway) callerOf(req mcp.Request) tools.Caller {
	c := g.caller
	c.Identity = identityOf(req)
	c.Auth = authOf(req, c.Identity)
	return c
}

// identityLimits are the limits of cfg over g's sessions.
func (g *Gateway) identityLimits(cfg limits.Config) *limits.PerIdentity {
	return limits.New(cfg, limits.Server{
		Sessions:    g.server.Sessions,
		Initialized: g.lists.ready,
		Uncounted:   uncounted,
		BusyCode:    codeBusy,
		Logger:      g.logger,
	})
}

// oauth is a listener's inbound OAuth: the checks of its tokens and each
// identity's limits.
type oauth struct {
	verifier *bearer.Verifier
	limits   limits.Config
}

// newOAuth returns the inbound OAuth of cfg; Close its verifier.
func newOAuth(cfg AuthConfig, opts bearer.Options) *oauth {
	return &oauth{verifier: bearer.New(cfg.Config, opts), limits: cfg.Limits}
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
func requireAuth(v *bearer.Verifier, l *limits.PerIdentity, next http.Handler) http.Handler {
	inner := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		info, _ := ctx.Value(tokenInfoKey{}).(*auth.TokenInfo)
		if info == nil {
			return nil, auth.ErrInvalidToken
		}
		return info, nil
	}, &auth.RequireBearerTokenOptions{ResourceMetadataURL: v.MetadataURL(), AllowMissingExpiration: true, ClockSkew: bearer.ClockSkew})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, e := v.Authenticate(r)
		if e != nil {
			v.Challenge(w, e)
			return
		}
		if refusal := l.Admit(r, info); refusal != nil {
			w.Header().Set("Retry-After", strconv.Itoa(refusal.RetryAfter))
			http.Error(w, "Too Many Requests: "+refusal.Message, http.StatusTooManyRequests)
			return
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenInfoKey{}, info)))
	})
}
