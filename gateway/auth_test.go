package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/gateway/limits"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// authFixture is a gateway with inbound OAuth on a loopback listener, the
// in-repo issuer, and the tool whoami, which answers its caller's identity.
type authFixture struct {
	url  string // the gateway's /mcp, its audience
	base string // http://127.0.0.1:PORT
	as   *oauthtest.Server
	a    *oauth
	g    *Gateway
	reg  *tools.Registry
	// skew moves the authenticator's clock.
	skew atomic.Int64
}

type authSetup struct {
	issuer oauthtest.Options
	auth   func(*AuthConfig)
	static string
	limits Limits
	tools  []tools.Definition
}

func newAuthFixture(t *testing.T, set authSetup) *authFixture {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &authFixture{base: "http://" + ln.Addr().String()}
	f.url = f.base + "/mcp"
	opt := set.issuer
	opt.Resource = f.url
	f.as = oauthtest.Start(t, opt)
	cfg := AuthConfig{Config: bearer.Config{Issuer: f.as.Issuer, Audience: f.url}}
	if set.auth != nil {
		set.auth(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	f.reg = tools.New(nil)
	register(t, f.reg, tools.Definition{
		Name: "whoami", Description: "The caller's identity.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(_ context.Context, call tools.Call) (tools.Output, error) {
			b, _ := json.Marshal(call.Caller.Identity)
			return tools.Output{Value: string(b), Content: []tools.Content{tools.Text(string(b))}}, nil
		},
	})
	for _, d := range set.tools {
		register(t, f.reg, d)
	}
	s := scope(t)
	f.g, err = New(s, f.reg, &Config{Auth: &cfg, Limits: set.limits}, &Deps{Debounce: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.a = newOAuth(cfg, bearer.Options{StaticToken: set.static, Now: func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) }})
	s.OnDispose("auth", f.a.verifier.Close)
	serve(s, f.g, ln, serveOptions{auth: f.a, token: set.static})
	return f
}

// post sends an initialize with token (none when "") and returns the
// answer's status and WWW-Authenticate.
func (f *authFixture) post(t *testing.T, token, sessionID string) (int, string, http.Header) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header
}

// noKeepAlive is a client that leaves no connection (nor goroutine) behind.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// tokenTransport adds a token to every request.
type tokenTransport struct {
	token string
	base  http.RoundTripper
}

func (b *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens a go-sdk session to the gateway with token.
func (f *authFixture) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "auth-test", Version: "0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: f.url,
		HTTPClient: &http.Client{Transport: &tokenTransport{token: token, base: tr}}, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func (f *authFixture) mustConnect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := f.connect(t, token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func authCall(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return resultText(res), res.IsError
}

// TestAuthRefusesBadTokens: every token the issuer did not sign for this
// gateway, or that is no longer (or not yet) valid, is 401 with a
// challenge naming the gateway's metadata and invalid_token; a request
// without a token is 401 naming the metadata too; a good token is let in.
func TestAuthRefusesBadTokens(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}})
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
	hmacKey := []byte(strings.Repeat("k", 32))
	hs256 := func() string {
		signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: hmacKey}, (&jose.SignerOptions{}).WithHeader("kid", "key-1"))
		tok, _ := jwt.Signed(signer).Claims(good()).Serialize()
		return tok
	}
	hour := time.Hour
	tests := []struct {
		name, token, want string
	}{
		{"no token", "", ""},
		{"wrong audience", f.as.Sign(with("aud", "http://127.0.0.1:1/other")), "not for this gateway"},
		{"expired", f.as.Sign(with("exp", time.Now().Add(-hour).Unix())), "expired"},
		{"not yet valid", f.as.Sign(with("nbf", time.Now().Add(hour).Unix())), "validation failed"},
		{"no exp", f.as.Sign(with("exp", nil)), "no exp"},
		{"no sub", f.as.Sign(with("sub", nil)), "no sub"},
		{"wrong issuer", f.as.Sign(with("iss", "https://elsewhere.example")), "issued by"},
		{"unknown key", oauthtest.SignUnpublished(good()), "does not publish"},
		{"alg none", oauthtest.Unsigned(good()), "asymmetric"},
		{"HS256", hs256(), "asymmetric"},
		{"tampered", f.as.Sign(good()) + "x", "signature"},
		{"opaque without introspection", "at-opaque", "introspectionUrl"},
	}
	meta := `resource_metadata="` + f.base + `/.well-known/oauth-protected-resource/mcp"`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, challenge, _ := f.post(t, tt.token, "")
			if status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", status)
			}
			if !strings.HasPrefix(challenge, "Bearer ") || !strings.Contains(challenge, meta) {
				t.Errorf("WWW-Authenticate %q, want a Bearer challenge with %s", challenge, meta)
			}
			if tt.want == "" {
				if strings.Contains(challenge, "error=") {
					t.Errorf("WWW-Authenticate %q: a request without a token gets no error code (RFC 6750 §3.1)", challenge)
				}
				return
			}
			if !strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(challenge, tt.want) {
				t.Errorf("WWW-Authenticate %q, want invalid_token saying %q", challenge, tt.want)
			}
		})
	}
	if status, _, _ := f.post(t, f.as.Sign(good()), ""); status != http.StatusOK {
		t.Errorf("a good token: status %d, want 200", status)
	}
}

// TestAuthInsufficientScope: a token without the required scopes is 403
// insufficient_scope naming them, the scopes the 401 challenge and the
// metadata name too, so that a client asks for them.
func TestAuthInsufficientScope(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true},
		auth: func(c *AuthConfig) { c.RequiredScopes = []string{"mcp", "tools"} }})
	status, challenge, _ := f.post(t, f.as.Sign(f.as.Claims("alice", nil, "mcp")), "")
	if status != http.StatusForbidden || !strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="mcp tools"`) {
		t.Errorf("status %d, WWW-Authenticate %q; want 403 insufficient_scope with scope=\"mcp tools\"", status, challenge)
	}
	if _, challenge, _ := f.post(t, "", ""); !strings.Contains(challenge, `scope="mcp tools"`) {
		t.Errorf("401 challenge %q names no scope", challenge)
	}
	if status, _, _ := f.post(t, f.as.Sign(f.as.Claims("alice", nil, "tools", "mcp", "other")), ""); status != http.StatusOK {
		t.Errorf("with the scopes: status %d", status)
	}
}

// TestAuthMetadataAndHealthWithoutToken: the RFC 9728 document names the
// audience and the issuer; it and the health checks need no token.
func TestAuthMetadataAndHealthWithoutToken(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true},
		auth: func(c *AuthConfig) { c.RequiredScopes = []string{"mcp"} }})
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := noKeepAlive.Get(f.base + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			Scopes               []string `json:"scopes_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %s, %v", path, resp.Status, err)
		}
		if doc.Resource != f.url || !cmp.Equal(doc.AuthorizationServers, []string{f.as.Issuer}) || !cmp.Equal(doc.Scopes, []string{"mcp"}) {
			t.Errorf("%s = %+v", path, doc)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := noKeepAlive.Get(f.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			t.Errorf("%s wants a token", path)
		}
	}
}

// TestAuthIdentityReachesTheTools: a call's caller carries its token's
// subject, client, scopes and groups; the static token's holder has no
// identity.
func TestAuthIdentityReachesTheTools(t *testing.T) {
	static := strings.Repeat("s", 32)
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}, static: static,
		auth: func(c *AuthConfig) { c.GroupsClaim = "realm.roles" }})
	claims := f.as.Claims("alice", nil, "mcp", "read")
	claims["realm"] = map[string]any{"roles": []string{"admins", "ops"}}
	cs := f.mustConnect(t, f.as.Sign(claims))
	text, _ := authCall(t, cs, "whoami", nil)
	var got tools.Identity
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("whoami = %q: %v", text, err)
	}
	want := tools.Identity{Subject: "alice", Client: "test-client", Scopes: []string{"mcp", "read"}, Groups: []string{"admins", "ops"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}
	if text, _ := authCall(t, f.mustConnect(t, static), "whoami", nil); text != "null" {
		t.Errorf("the static token's caller = %s, want no identity", text)
	}
}

// TestAuthSessionBelongsToItsSubject: a request on alice's session with
// bob's token is refused; alice's next token (a refresh) is let in.
func TestAuthSessionBelongsToItsSubject(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}})
	status, _, h := f.post(t, f.as.Sign(f.as.Claims("alice", nil)), "")
	id := h.Get("Mcp-Session-Id")
	if status != 200 || id == "" {
		t.Fatalf("initialize: %d, session %q", status, id)
	}
	if status, _, _ := f.post(t, f.as.Sign(f.as.Claims("bob", nil)), id); status != http.StatusForbidden {
		t.Errorf("bob on alice's session: status %d, want 403", status)
	}
	if status, _, _ := f.post(t, f.as.Sign(f.as.Claims("alice", nil)), id); status == http.StatusForbidden || status == http.StatusUnauthorized {
		t.Errorf("alice's new token on her session: status %d", status)
	}
}

// TestAuthJWKSRotation: a token signed with a key the issuer added is
// verified after one more fetch of the JWKS; tokens with key ids nobody
// publishes fetch it at most once per interval.
func TestAuthJWKSRotation(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}})
	token := func() string { return f.as.Sign(f.as.Claims("alice", nil)) }
	if status, _, _ := f.post(t, token(), ""); status != 200 {
		t.Fatalf("status %d", status)
	}
	f.as.Rotate()
	f.skew.Add(int64(bearer.JWKSMinRefetch))
	if status, challenge, _ := f.post(t, token(), ""); status != 200 {
		t.Fatalf("a token of the rotated key: status %d (%s)", status, challenge)
	}
	fetches, _ := f.as.Counts()
	if fetches != 2 {
		t.Errorf("%d JWKS fetches, want 2 (the first token, the rotation)", fetches)
	}
	for range 5 {
		if status, _, _ := f.post(t, oauthtest.SignUnpublished(f.as.Claims("mallory", nil)), ""); status != http.StatusUnauthorized {
			t.Fatalf("unknown key: status %d", status)
		}
	}
	if after, _ := f.as.Counts(); after != fetches {
		t.Errorf("unknown key ids made %d more JWKS fetches within the interval, want 0", after-fetches)
	}
}

// TestAuthOIDCDiscovery: an issuer that publishes only OpenID Connect
// discovery is found there.
func TestAuthOIDCDiscovery(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true, OIDCOnly: true}})
	if status, challenge, _ := f.post(t, f.as.Sign(f.as.Claims("alice", nil)), ""); status != 200 {
		t.Fatalf("status %d (%s)", status, challenge)
	}
}

// TestAuthIntrospection: an opaque token is explained by the issuer's
// introspection endpoint, once per token for a while; an unknown one is 401.
func TestAuthIntrospection(t *testing.T) {
	var f *authFixture
	f = newAuthFixture(t, authSetup{auth: func(c *AuthConfig) { c.IntrospectionURL = c.Issuer + "/introspect" }})
	// A login gives an opaque token.
	tok := loginDirect(t, f.as, "carol", "devs")
	cs := f.mustConnect(t, tok)
	text, _ := authCall(t, cs, "whoami", nil)
	if !strings.Contains(text, `"Subject":"carol"`) || !strings.Contains(text, `"devs"`) {
		t.Errorf("whoami = %s", text)
	}
	_, introspections := f.as.Counts()
	if introspections != 1 {
		t.Errorf("%d introspections for one token's requests, want 1", introspections)
	}
	if status, challenge, _ := f.post(t, "at-unknown", ""); status != 401 || !strings.Contains(challenge, "not active") {
		t.Errorf("unknown opaque token: %d %q", status, challenge)
	}
}

// loginDirect runs the issuer's authorization code flow for subject (in
// groups) as a client would, and returns the access token.
func loginDirect(t *testing.T, as *oauthtest.Server, subject string, groups ...string) string {
	t.Helper()
	as.SetUser(subject, groups...)
	return as.LoginForTest(t)
}

// TestAuthConfigErrors: each bad key of the auth block is named.
func TestAuthConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		auth AuthConfig
		key  string
	}{
		{"no issuer", AuthConfig{Config: bearer.Config{Audience: "https://gw.example/mcp"}}, "auth.issuer"},
		{"no audience", AuthConfig{Config: bearer.Config{Issuer: "https://id.example"}}, "auth.audience"},
		{"http issuer", AuthConfig{Config: bearer.Config{Issuer: "http://id.example", Audience: "https://gw.example/mcp"}}, "auth.issuer"},
		{"relative audience", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "/mcp"}}, "auth.audience"},
		{"bad jwks", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp", JWKSURL: "ftp://x"}}, "auth.jwksUrl"},
		{"bad introspection", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp", IntrospectionURL: "x"}}, "auth.introspectionUrl"},
		{"scope with space", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp", RequiredScopes: []string{"a b"}}}, "auth.requiredScopes[0]"},
		{"groups claim", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp", GroupsClaim: "a..b"}}, "auth.groupsClaim"},
		{"negative rate", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp"}, Limits: limits.Config{RequestsPerSecond: -1}}, "auth.limits.requestsPerSecond"},
		{"burst alone", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp"}, Limits: limits.Config{Burst: 3}}, "auth.limits.burst"},
		{"negative sessions", AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp"}, Limits: limits.Config{Sessions: -1}}, "auth.limits.sessions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{HTTP: "0.0.0.0:8931", Auth: &tt.auth}
			err := c.Validate()
			var ke *host.KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key {
				t.Fatalf("Validate() = %v, want a KeyError for %s", err, tt.key)
			}
		})
	}
	// A non-loopback address with auth and no token is fine: the issuer
	// guards it.
	ok := Config{HTTP: "0.0.0.0:8931", Auth: &AuthConfig{Config: bearer.Config{Issuer: "https://id.example", Audience: "https://gw.example/mcp"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	if err := (&Config{Auth: ok.Auth}).Validate(); err == nil || !strings.Contains(err.Error(), "auth") {
		t.Errorf("auth without http: %v", err)
	}
}

// TestAuthRememberedTokenExpires: a JWT verified once is not checked
// again on every request, but stops being accepted at its exp (and the
// skew) all the same.
func TestAuthRememberedTokenExpires(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}})
	claims := f.as.Claims("alice", nil)
	claims["exp"] = time.Now().Add(2 * time.Minute).Unix()
	token := f.as.Sign(claims)
	for range 2 {
		if status, _, _ := f.post(t, token, ""); status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
	}
	f.skew.Add(int64(2*time.Minute + bearer.ClockSkew + time.Second))
	if status, challenge, _ := f.post(t, token, ""); status != http.StatusUnauthorized || !strings.Contains(challenge, "expired") {
		t.Errorf("past its exp: %d %q, want 401 expired", status, challenge)
	}
}
