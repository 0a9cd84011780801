package oauthtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// signingKey is one key of the server's JWKS.
type signingKey struct {
	id   string
	priv *rsa.PrivateKey
}

// keyRing holds the signing keys: the last signs, the published ones are
// in the JWKS. Guarded by Server.mu, but for the first rotate in Start.
type keyRing struct {
	keys []signingKey
	n    int
}

// rotate adds a fresh key, which signs from now on, and retires (from the
// JWKS) every key but the one before it, as issuers do: tokens signed a
// moment ago stay verifiable.
func (k *keyRing) rotate() {
	k.n++
	k.keys = append(k.keys, newKey(fmt.Sprintf("key-%d", k.n)))
	if len(k.keys) > 2 {
		k.keys = k.keys[len(k.keys)-2:]
	}
}

func newKey(id string) signingKey {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return signingKey{id: id, priv: priv}
}

func (k *keyRing) current() signingKey { return k.keys[len(k.keys)-1] }

func (k *keyRing) sign(claims map[string]any) string { return signWith(k.current(), claims) }

// signWith signs claims as an RS256 JWT access token (typ at+jwt, RFC
// 9068) under key's id.
func signWith(key signingKey, claims map[string]any) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key.priv},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", key.id))
	if err != nil {
		panic(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}

// claimsOf returns the claims of an access token for g. The caller holds mu.
func (s *Server) claimsOf(g grant) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": s.Issuer, "sub": g.user.subject, "aud": g.resource, "client_id": g.clientID,
		"scope": strings.Join(g.scopes, " "), "iat": now.Unix(), "nbf": now.Unix(),
		"exp": g.expiry.Unix(), "jti": randomText(),
	}
	if g.user.groups != nil {
		c["groups"] = g.user.groups
	}
	return c
}

// SetUser makes subject, a member of groups, the person of the logins
// that follow (default "alice", in no group).
func (s *Server) SetUser(subject string, groups ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user = user{subject: subject, groups: groups}
}

// Claims returns the claims of a valid access token for subject, in
// groups, with scopes, issued to client "test-client" for the resource
// and valid for the token lifetime: tests change them to make bad ones.
func (s *Server) Claims(subject string, groups []string, scopes ...string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimsOf(grant{clientID: "test-client", resource: s.opt.Resource, scopes: scopes,
		expiry: time.Now().Add(s.opt.TokenLifetime), user: user{subject: subject, groups: groups}})
}

// Sign signs claims with the current key of the JWKS.
func (s *Server) Sign(claims map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.sign(claims)
}

// SignUnpublished signs claims with a key the JWKS does not hold, under a
// key id it does not know either.
func SignUnpublished(claims map[string]any) string {
	return signWith(newKey("unpublished"), claims)
}

// Unsigned returns claims as a JWT with alg "none", which no verifier may
// accept.
func Unsigned(claims map[string]any) string {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	body, _ := json.Marshal(claims)
	return enc.EncodeToString(header) + "." + enc.EncodeToString(body) + "."
}

// Rotate adds a new signing key to the JWKS, signs with it from now on,
// and retires the keys before the previous one; it returns the new key's id.
func (s *Server) Rotate() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys.rotate()
	return s.keys.current().id
}

// Counts returns the JWKS fetches and introspections so far.
func (s *Server) Counts() (jwksFetches, introspections int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.JWKSFetches, s.Introspections
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.JWKSFetches++
	var set jose.JSONWebKeySet
	for _, k := range s.keys.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.id, Algorithm: string(jose.RS256), Use: "sig"})
	}
	s.mu.Unlock()
	writeJSON(w, 200, set)
}

// introspect is RFC 7662's endpoint: what a live access token stands for,
// or {"active": false}.
func (s *Server) introspect(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Introspections++
	g, live := s.access[r.PostForm.Get("token")]
	if !live || time.Now().After(g.expiry) {
		writeJSON(w, 200, map[string]any{"active": false})
		return
	}
	out := s.claimsOf(g)
	out["active"] = true
	out["token_type"] = "Bearer"
	if s.editIntrospection != nil {
		s.editIntrospection(out)
	}
	writeJSON(w, 200, out)
}

// EditIntrospection makes the introspection endpoint pass each active
// answer through edit before it is sent (nil: as issued), so a test can
// answer as a careless or hostile issuer would.
func (s *Server) EditIntrospection(edit func(claims map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.editIntrospection = edit
}

// LoginForTest runs the authorization code flow (PKCE, resource) as a
// client with no browser would, for the user SetUser named, and returns
// the access token.
func (s *Server) LoginForTest(t testing.TB) string {
	t.Helper()
	const clientID, redirect = "direct-test-client", "http://127.0.0.1:1/callback"
	s.mu.Lock()
	s.clients[clientID] = ""
	s.mu.Unlock()
	verifier := randomText() + randomText()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {clientID}, "redirect_uri": {redirect}, "response_type": {"code"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {s.opt.Resource}, "scope": {strings.Join(s.opt.Scopes, " ")}, "state": {"x"}}
	client := &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DisableKeepAlives: true},
	}
	resp, err := client.Get(s.Issuer + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	resp, err = client.PostForm(s.Issuer+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "client_id": {clientID}, "resource": {s.opt.Resource}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %s, %v", resp.Status, err)
	}
	return tok.AccessToken
}
