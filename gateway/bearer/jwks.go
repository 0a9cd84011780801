package bearer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// keySet is the issuer's JWKS, fetched at the first token, kept for
// maxAge, and fetched again at once for a key id it does not hold (the
// issuer rotated its keys), at most once per minRefetch, so that tokens
// with made-up key ids cannot make the gateway hammer the issuer.
type keySet struct {
	v          *Verifier
	minRefetch time.Duration
	maxAge     time.Duration

	cur atomic.Pointer[jwks]
	mu  sync.Mutex // serializes fetches; guards what follows
	url string     // the JWKS's URL, discovered at the first fetch unless configured
	// tried is when the last fetch began, lastErr how it failed.
	tried   time.Time
	lastErr error
}

// JWKSMinRefetch is the shortest interval between two fetches of the
// JWKS for key ids it does not hold.
const JWKSMinRefetch = 10 * time.Second

// jwksMaxAge is how long a fetched JWKS is used before it is fetched again.
const jwksMaxAge = time.Hour

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
func (k *keySet) lookup(ctx context.Context, id string) ([]jose.JSONWebKey, *Error) {
	now := k.v.now()
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
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if k.url == "" {
		meta, err := k.v.issuerMetadata(ctx)
		if err != nil {
			return nil, err
		}
		if meta.JWKSURI == "" {
			return nil, fmt.Errorf("the metadata of %s names no jwks_uri; set auth.jwksUrl", k.v.cfg.Issuer)
		}
		k.url = meta.JWKSURI
	}
	var set jose.JSONWebKeySet
	if err := k.v.getJSON(ctx, k.url, &set); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	out := &jwks{byID: map[string][]jose.JSONWebKey{}, at: k.v.now()}
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
func (v *Verifier) issuerMetadata(ctx context.Context) (*issuerMeta, error) {
	u, err := url.Parse(v.cfg.Issuer)
	if err != nil {
		return nil, err
	}
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(v.cfg.Issuer, "/") + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		var m issuerMeta
		if err := v.getJSON(ctx, c, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != v.cfg.Issuer {
			return nil, fmt.Errorf("%s names issuer %q, not %q: check auth.issuer", c, m.Issuer, v.cfg.Issuer)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("no metadata for issuer %s: %w", v.cfg.Issuer, errors.Join(errs...))
}

// maxIssuerDoc bounds a document read from the issuer.
const maxIssuerDoc = 1 << 20

func (v *Verifier) getJSON(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	return v.do(req, out)
}

// do sends req to the issuer and decodes its JSON answer into out; no
// message shows the credentials a URL may hold.
func (v *Verifier) do(req *http.Request, out any) error {
	resp, err := v.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxIssuerDoc))
		return fmt.Errorf("%s %s: %s", req.Method, req.URL.Redacted(), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxIssuerDoc)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	return nil
}
