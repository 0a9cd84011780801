package bearer

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
)

const aud = "http://127.0.0.1:1/mcp"

// fixture is a Verifier of the in-repo issuer, with a clock tests move.
type fixture struct {
	as   *oauthtest.Server
	v    *Verifier
	skew atomic.Int64
}

func newFixture(t *testing.T, issuer oauthtest.Options, edit func(*Config), opts Options) *fixture {
	t.Helper()
	issuer.Resource = aud
	f := &fixture{as: oauthtest.Start(t, issuer)}
	cfg := Config{Issuer: f.as.Issuer, Audience: aud}
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	opts.Now = func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) }
	f.v = New(cfg, opts)
	t.Cleanup(func() { f.v.Close() })
	return f
}

func request(header string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, aud, nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	return r
}

// TestAuthenticate: each bad token is refused with the status, code and
// reason a client acts on; a good one gives its identity.
func TestAuthenticate(t *testing.T) {
	f := newFixture(t, oauthtest.Options{JWT: true}, func(c *Config) { c.RequiredScopes = []string{"mcp"} }, Options{StaticToken: "static-token-0123456789"})
	good := func() map[string]any { return f.as.Claims("alice", []string{"admins"}, "mcp") }
	with := func(k string, v any) map[string]any {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	hs256 := func() string {
		signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte(strings.Repeat("k", 32))}, (&jose.SignerOptions{}).WithHeader("kid", "key-1"))
		tok, _ := jwt.Signed(signer).Claims(good()).Serialize()
		return tok
	}
	hour := time.Hour
	tests := []struct {
		name, header string
		status       int
		code, want   string
	}{
		{"no header", "", 401, "", "send Authorization"},
		{"basic scheme", "Basic YTpi", 401, "", "send Authorization"},
		{"empty bearer", "Bearer ", 401, "", "send Authorization"},
		{"wrong audience", "Bearer " + f.as.Sign(with("aud", "http://127.0.0.1:1/other")), 401, "invalid_token", "not for this gateway"},
		{"expired", "Bearer " + f.as.Sign(with("exp", time.Now().Add(-hour).Unix())), 401, "invalid_token", "expired"},
		{"not yet valid", "Bearer " + f.as.Sign(with("nbf", time.Now().Add(hour).Unix())), 401, "invalid_token", "validation failed"},
		{"no exp", "Bearer " + f.as.Sign(with("exp", nil)), 401, "invalid_token", "no exp"},
		{"no sub", "Bearer " + f.as.Sign(with("sub", nil)), 401, "invalid_token", "no sub"},
		{"wrong issuer", "Bearer " + f.as.Sign(with("iss", "https://elsewhere.example")), 401, "invalid_token", "issued by"},
		{"unknown key", "Bearer " + oauthtest.SignUnpublished(good()), 401, "invalid_token", "does not publish"},
		{"alg none", "Bearer " + oauthtest.Unsigned(good()), 401, "invalid_token", "asymmetric"},
		{"HS256", "Bearer " + hs256(), 401, "invalid_token", "asymmetric"},
		{"tampered", "Bearer " + f.as.Sign(good()) + "x", 401, "invalid_token", "signature"},
		{"opaque without introspection", "Bearer at-opaque", 401, "invalid_token", "introspectionUrl"},
		{"static token's prefix", "Bearer static-token-012345678", 401, "invalid_token", "introspectionUrl"},
		{"without the scope", "Bearer " + f.as.Sign(f.as.Claims("alice", nil, "other")), 403, "insufficient_scope", "lacks scope mcp"},
		{"good", "Bearer " + f.as.Sign(good()), 200, "", ""},
		{"good, scheme in lower case", "bearer " + f.as.Sign(good()), 200, "", ""},
		{"static token", "Bearer static-token-0123456789", 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, e := f.v.Authenticate(request(tt.header))
			switch {
			case tt.status == 0:
				if e != nil || !IsStatic(info) || IdentityOf(info) != nil {
					t.Fatalf("Authenticate = %+v, %v; want the static token's holder, no identity", info, e)
				}
			case tt.status == 200:
				if e != nil {
					t.Fatalf("Authenticate: %v", e)
				}
				id := IdentityOf(info)
				if id == nil || id.Subject != "alice" || info.UserID != "sub:alice" || IsStatic(info) {
					t.Fatalf("identity %+v, info %+v", id, info)
				}
			case e == nil:
				t.Fatalf("Authenticate let it in: %+v", info)
			case e.Status != tt.status || e.Code != tt.code || !strings.Contains(e.Description, tt.want):
				t.Fatalf("refused %d %q %q, want %d %q saying %q", e.Status, e.Code, e.Description, tt.status, tt.code, tt.want)
			}
		})
	}
}

// TestChallenge: a refusal's WWW-Authenticate names the metadata and the
// scopes, and the error only when a token was sent (RFC 6750 §3.1); an
// issuer that does not answer is 503 with Retry-After, not a login.
func TestChallenge(t *testing.T) {
	v := New(Config{Issuer: "https://id.example", Audience: "https://gw.example/team/mcp", RequiredScopes: []string{"mcp", "tools"}}, Options{})
	defer v.Close()
	meta := `resource_metadata="https://gw.example/.well-known/oauth-protected-resource/team/mcp"`
	tests := []struct {
		name   string
		err    *Error
		status int
		header []string
		absent string
	}{
		{"no token", &Error{Status: 401, Description: "send it"}, 401, []string{meta, `scope="mcp tools"`}, "error="},
		{"bad token", invalid(`a "quoted" reason`), 401, []string{meta, `error="invalid_token"`, `error_description="a 'quoted' reason"`}, ""},
		{"scope", &Error{Status: 403, Code: "insufficient_scope", Description: "x"}, 403, []string{`error="insufficient_scope"`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			v.Challenge(w, tt.err)
			got := w.Header().Get("WWW-Authenticate")
			if w.Code != tt.status || !strings.HasPrefix(got, "Bearer ") || w.Header().Get("Connection") != "close" {
				t.Fatalf("%d %q (Connection %q)", w.Code, got, w.Header().Get("Connection"))
			}
			for _, want := range tt.header {
				if !strings.Contains(got, want) {
					t.Errorf("WWW-Authenticate %q lacks %s", got, want)
				}
			}
			if tt.absent != "" && strings.Contains(got, tt.absent) {
				t.Errorf("WWW-Authenticate %q has %s", got, tt.absent)
			}
		})
	}
	w := httptest.NewRecorder()
	v.Challenge(w, unavailable(errors.New("dial refused")))
	if w.Code != 503 || w.Header().Get("Retry-After") == "" || w.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("unavailable: %d %v", w.Code, w.Header())
	}
}

// TestIssuerDown: with no keys fetched yet, a token is 503 (retry), not
// 401 (log in again); keys fetched once keep verifying while the issuer
// is down.
func TestIssuerDown(t *testing.T) {
	f := newFixture(t, oauthtest.Options{JWT: true}, nil, Options{})
	token := "Bearer " + f.as.Sign(f.as.Claims("alice", nil))
	if _, e := f.v.Authenticate(request(token)); e != nil {
		t.Fatal(e)
	}
	f.v.verified = verifiedCache{}
	f.as.Close()
	f.skew.Add(int64(JWKSMinRefetch))
	if _, e := f.v.Authenticate(request(token)); e != nil {
		t.Errorf("cached keys, issuer down: %v", e)
	}

	down := New(Config{Issuer: f.as.Issuer, Audience: aud}, Options{})
	defer down.Close()
	if _, e := down.Authenticate(request(token)); e == nil || e.Status != 503 {
		t.Errorf("no keys, issuer down: %v, want 503", e)
	}
}

// TestJWKSRefetch: a token of a key the issuer added is verified after
// one more fetch of the JWKS; key ids nobody publishes fetch it at most
// once per JWKSMinRefetch.
func TestJWKSRefetch(t *testing.T) {
	f := newFixture(t, oauthtest.Options{JWT: true}, nil, Options{})
	token := func() *http.Request { return request("Bearer " + f.as.Sign(f.as.Claims("alice", nil))) }
	if _, e := f.v.Authenticate(token()); e != nil {
		t.Fatal(e)
	}
	f.as.Rotate()
	f.skew.Add(int64(JWKSMinRefetch))
	if _, e := f.v.Authenticate(token()); e != nil {
		t.Fatalf("a token of the rotated key: %v", e)
	}
	fetches, _ := f.as.Counts()
	if fetches != 2 {
		t.Errorf("%d JWKS fetches, want 2 (the first token, the rotation)", fetches)
	}
	for range 5 {
		if _, e := f.v.Authenticate(request("Bearer " + oauthtest.SignUnpublished(f.as.Claims("mallory", nil)))); e == nil || e.Status != 401 {
			t.Fatalf("unknown key: %v", e)
		}
	}
	if after, _ := f.as.Counts(); after != fetches {
		t.Errorf("unknown key ids made %d more JWKS fetches within the interval, want 0", after-fetches)
	}
	f.skew.Add(int64(JWKSMinRefetch))
	f.v.Authenticate(request("Bearer " + oauthtest.SignUnpublished(f.as.Claims("mallory", nil))))
	if after, _ := f.as.Counts(); after != fetches+1 {
		t.Errorf("after the interval: %d more fetches, want 1", after-fetches)
	}
}

// TestDiscovery: the JWKS is found by RFC 8414 metadata, or by OpenID
// Connect discovery when the issuer has only that.
func TestDiscovery(t *testing.T) {
	for _, oidc := range []bool{false, true} {
		f := newFixture(t, oauthtest.Options{JWT: true, OIDCOnly: oidc}, nil, Options{})
		if _, e := f.v.Authenticate(request("Bearer " + f.as.Sign(f.as.Claims("alice", nil)))); e != nil {
			t.Errorf("OIDCOnly=%v: %v", oidc, e)
		}
	}
}

// TestRememberedTokenExpires: a JWT verified once is not checked again,
// but stops being accepted at its exp (and the skew) all the same.
func TestRememberedTokenExpires(t *testing.T) {
	f := newFixture(t, oauthtest.Options{JWT: true}, nil, Options{})
	claims := f.as.Claims("alice", nil)
	claims["exp"] = time.Now().Add(2 * time.Minute).Unix()
	token := "Bearer " + f.as.Sign(claims)
	for range 3 {
		if _, e := f.v.Authenticate(request(token)); e != nil {
			t.Fatal(e)
		}
	}
	if fetches, _ := f.as.Counts(); fetches != 1 {
		t.Errorf("%d JWKS fetches", fetches)
	}
	f.skew.Add(int64(2*time.Minute + ClockSkew + time.Second))
	if _, e := f.v.Authenticate(request(token)); e == nil || !strings.Contains(e.Description, "expired") {
		t.Errorf("past its exp: %v, want expired", e)
	}
}

// TestIntrospection: an active answer is accepted only when it names the
// issuer and this gateway in aud; each token is asked about once for a
// while.
func TestIntrospection(t *testing.T) {
	f := newFixture(t, oauthtest.Options{}, func(c *Config) { c.IntrospectionURL = c.Issuer + "/introspect" }, Options{})
	cases := []struct {
		name string
		edit func(map[string]any)
		want string // "" when let in
	}{
		{"as issued", nil, ""},
		{"aud as a string", func(c map[string]any) { c["aud"] = aud }, ""},
		{"no aud", func(c map[string]any) { delete(c, "aud") }, "names no aud"},
		{"empty aud", func(c map[string]any) { c["aud"] = []any{} }, "names no aud"},
		{"another resource", func(c map[string]any) { c["aud"] = "https://other.example/api" }, "not for this gateway"},
		{"no iss", func(c map[string]any) { delete(c, "iss") }, "names no iss"},
		{"another issuer", func(c map[string]any) { c["iss"] = "https://evil.example" }, "not by"},
		{"active as a string", func(c map[string]any) { c["active"] = "true" }, "not active"},
		{"expired", func(c map[string]any) { c["exp"] = float64(time.Now().Add(-time.Hour).Unix()) }, "expired"},
		{"not yet valid", func(c map[string]any) { c["nbf"] = float64(time.Now().Add(time.Hour).Unix()) }, "not valid before"},
		{"one group with spaces", func(c map[string]any) { c["groups"] = "Platform Team" }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.as.EditIntrospection(tc.edit)
			t.Cleanup(func() { f.as.EditIntrospection(nil) })
			f.as.SetUser("carol", "devs")
			tok := "Bearer " + f.as.LoginForTest(t)
			_, before := f.as.Counts()
			info, e := f.v.Authenticate(request(tok))
			switch {
			case tc.want == "" && e != nil:
				t.Fatalf("refused: %v", e)
			case tc.want != "" && (e == nil || e.Status != 401 || !strings.Contains(e.Description, tc.want)):
				t.Fatalf("%v, want 401 saying %q", e, tc.want)
			case tc.want == "":
				if id := IdentityOf(info); id == nil || id.Subject != "carol" {
					t.Fatalf("identity %+v", id)
				}
				f.v.Authenticate(request(tok))
				if _, after := f.as.Counts(); after != before+1 {
					t.Errorf("%d introspections for two requests of one token, want 1", after-before)
				}
			}
		})
	}
	if _, e := f.v.Authenticate(request("Bearer at-unknown")); e == nil || !strings.Contains(e.Description, "not active") {
		t.Errorf("unknown opaque token: %v", e)
	}
}

// TestClaims: how an identity is read from the claims.
func TestClaims(t *testing.T) {
	tests := []struct {
		name        string
		groupsClaim string
		claims      map[string]any
		groups      []string
		scopes      []string
		client      string
	}{
		{"groups list", "", map[string]any{"groups": []any{"a", "b", 3}}, []string{"a", "b"}, nil, ""},
		{"one group with spaces", "", map[string]any{"groups": "Platform Team"}, []string{"Platform Team"}, nil, ""},
		{"nested", "realm_access.roles", map[string]any{"realm_access": map[string]any{"roles": []any{"admin"}}}, []string{"admin"}, nil, ""},
		{"nested, not an object", "realm_access.roles", map[string]any{"realm_access": "x"}, nil, nil, ""},
		{"scope string", "", map[string]any{"scope": "a b"}, nil, []string{"a", "b"}, ""},
		{"scp list", "", map[string]any{"scp": []any{"a", "b"}}, nil, []string{"a", "b"}, ""},
		{"scp string", "", map[string]any{"scp": "a b"}, nil, []string{"a", "b"}, ""},
		{"client_id", "", map[string]any{"client_id": "c", "azp": "z"}, nil, nil, "c"},
		{"azp", "", map[string]any{"azp": "z"}, nil, nil, "z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(Config{Issuer: "https://id.example", Audience: aud, GroupsClaim: tt.groupsClaim}, Options{})
			tt.claims["sub"] = "s"
			info, e := v.tokenInfo(tt.claims)
			if e != nil {
				t.Fatal(e)
			}
			id := IdentityOf(info)
			if strings.Join(id.Groups, "|") != strings.Join(tt.groups, "|") || strings.Join(id.Scopes, "|") != strings.Join(tt.scopes, "|") || id.Client != tt.client {
				t.Errorf("identity %+v", id)
			}
		})
	}
}

// TestConfigValidate: each bad key is named, relative to the block.
func TestConfigValidate(t *testing.T) {
	const iss, gw = "https://id.example", "https://gw.example/mcp"
	tests := []struct {
		name string
		cfg  Config
		key  string
	}{
		{"no issuer", Config{Audience: gw}, "issuer"},
		{"no audience", Config{Issuer: iss}, "audience"},
		{"http issuer", Config{Issuer: "http://id.example", Audience: gw}, "issuer"},
		{"relative audience", Config{Issuer: iss, Audience: "/mcp"}, "audience"},
		{"audience with a fragment", Config{Issuer: iss, Audience: gw + "#x"}, "audience"},
		{"bad jwks", Config{Issuer: iss, Audience: gw, JWKSURL: "ftp://x"}, "jwksUrl"},
		{"bad introspection", Config{Issuer: iss, Audience: gw, IntrospectionURL: "x"}, "introspectionUrl"},
		{"scope with space", Config{Issuer: iss, Audience: gw, RequiredScopes: []string{"ok", "a b"}}, "requiredScopes[1]"},
		{"empty scope", Config{Issuer: iss, Audience: gw, RequiredScopes: []string{""}}, "requiredScopes[0]"},
		{"groups claim", Config{Issuer: iss, Audience: gw, GroupsClaim: "a..b"}, "groupsClaim"},
		{"fine", Config{Issuer: iss, Audience: gw}, ""},
		{"loopback http", Config{Issuer: "http://127.0.0.1:9/x", Audience: "http://localhost:1/mcp"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var ke *host.KeyError
			switch {
			case tt.key == "" && err != nil:
				t.Fatalf("Validate() = %v", err)
			case tt.key != "" && (!errors.As(err, &ke) || ke.Key != tt.key):
				t.Fatalf("Validate() = %v, want a KeyError for %s", err, tt.key)
			}
		})
	}
}

func TestResourceMetadataURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://gw.example/mcp":       "https://gw.example/.well-known/oauth-protected-resource/mcp",
		"https://gw.example/team/mcp/": "https://gw.example/.well-known/oauth-protected-resource/team/mcp",
		"https://gw.example":           "https://gw.example/.well-known/oauth-protected-resource",
	} {
		if got := ResourceMetadataURL(in); got != want {
			t.Errorf("ResourceMetadataURL(%q) = %q, want %q", in, got, want)
		}
	}
}
