package bearer

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// introspector asks the issuer what an opaque token stands for (RFC 7662),
// and remembers an active answer for a little while: one introspection
// per token per introspectionTTL, not one per request.
type introspector struct {
	v     *Verifier
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

func (in *introspector) check(ctx context.Context, raw string) (map[string]any, *Error) {
	cfg := &in.v.cfg
	key := sha256.Sum256([]byte(raw))
	now := in.v.now()
	in.mu.Lock()
	c, ok := in.cache[key]
	in.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.claims, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, unavailable(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var claims map[string]any
	if err := in.v.do(req, &claims); err != nil {
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
		return nil, invalid("the issuer's introspection answer names no iss; the gateway accepts only tokens it can tell are issued by %q", cfg.Issuer)
	case iss != cfg.Issuer:
		return nil, invalid("issued by %q, not by %q", iss, cfg.Issuer)
	}
	switch aud := claimList(claims["aud"]); {
	case len(aud) == 0:
		return nil, invalid("the issuer's introspection answer names no aud; ask for a token with resource=%s", cfg.Audience)
	case !slices.Contains(aud, cfg.Audience):
		return nil, invalid("issued for %q, not for this gateway (%s): ask for resource=%s", aud, cfg.Audience, cfg.Audience)
	}
	until := now.Add(introspectionTTL)
	if exp, ok := claims["exp"].(float64); ok {
		t := time.Unix(int64(exp), 0)
		if now.After(t.Add(ClockSkew)) {
			return nil, invalid("expired at %s", t.UTC().Format(time.RFC3339))
		}
		if t.Before(until) {
			until = t
		}
	}
	if nbf, ok := claims["nbf"].(float64); ok && now.Add(ClockSkew).Before(time.Unix(int64(nbf), 0)) {
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
