package bearer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/dsh-host/dsh-host/services/tools"
)

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
func (v *Verifier) verifyJWT(ctx context.Context, raw string) (map[string]any, *Error) {
	tok, err := jwt.ParseSigned(raw, allowedAlgs())
	if err != nil {
		return nil, invalid("not a JWT signed with an asymmetric algorithm: %v", err)
	}
	h := tok.Headers[0]
	keys, e := v.keys.lookup(ctx, h.KeyID)
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
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: v.now()}, ClockSkew)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, invalid("issued by %q, not by %q", std.Issuer, v.cfg.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, invalid("issued for %q, not for this gateway (%s): ask for resource=%s", []string(std.Audience), v.cfg.Audience, v.cfg.Audience)
	case errors.Is(err, jwt.ErrExpired):
		return nil, invalid("expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
	case err != nil:
		return nil, invalid("%v", err)
	}
	return claims, nil
}

// tokenInfo returns what go-sdk and the tools pipeline keep of a token's
// claims: the subject (also the session's owner), client, scopes, groups
// and expiry.
func (v *Verifier) tokenInfo(claims map[string]any) (*auth.TokenInfo, *Error) {
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
	var c any = claims
	for _, part := range v.groupsClaim {
		m, _ := c.(map[string]any)
		c = m[part]
	}
	id.Groups = claimList(c)
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
