// Package oauthtest is test-only code: a remote MCP server on 127.0.0.1
// that is its own OAuth 2.1 authorization server, so that tests log in
// for real (discovery, dynamic registration, PKCE, resource, state, iss,
// refresh, step-up, revocation) without leaving the machine. Its
// authorization endpoint redirects at once, as if a person had agreed, so
// a "browser" that follows the redirect completes the login (Follow).
//
// It also issues tokens for another protected resource (Options.Resource,
// such as a gateway): signed JWT access tokens with a JWKS that rotates
// (jwt.go), or opaque ones that RFC 7662 introspection explains, for the
// user SetUser names.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options shape the server.
type Options struct {
	// Scopes are those the server names (scopes_supported) and a token
	// must hold for any request.
	Scopes []string
	// StepUpScope, when set, is also needed to call the tool "admin": a
	// token without it gets 403 insufficient_scope.
	StepUpScope string
	// TokenLifetime of access tokens (default an hour).
	TokenLifetime time.Duration
	// WrongIss makes the redirect carry another issuer (RFC 9207).
	WrongIss bool
	// PreregisteredID and PreregisteredSecret are a client known
	// beforehand; dynamic registration works besides.
	PreregisteredID, PreregisteredSecret string
	// Resource is the resource (RFC 8707) tokens are issued for, their
	// audience: another server this one is the authorization server of,
	// such as a gateway (default URL, the server's own MCP endpoint).
	Resource string
	// JWT makes access tokens JWTs signed with the current key of the
	// server's JWKS (jwt.go); without it they are opaque.
	JWT bool
	// OIDCOnly publishes the metadata at /.well-known/openid-configuration
	// only, as an OpenID provider that has no RFC 8414 document.
	OIDCOnly bool
}

// Server is the MCP server and its authorization server.
type Server struct {
	// URL is the MCP endpoint; Issuer the authorization server.
	URL, Issuer string

	opt Options
	srv *httptest.Server
	mcp *mcp.Server

	mu            sync.Mutex
	clients       map[string]string // client id → secret ("" public)
	redirects     map[string][]string
	codes         map[string]grant
	access        map[string]grant // live access tokens
	refresh       map[string]grant // unspent refresh tokens
	refuseRefresh bool
	// user is who logs in next (SetUser).
	user user
	keys keyRing
	// editIntrospection changes active introspection answers.
	editIntrospection func(map[string]any)
	// Counters.
	Logins, Refreshes, Registrations int
	Revoked                          []string
	JWKSFetches, Introspections      int
}

// user is a login's person.
type user struct {
	subject string
	groups  []string
}

// grant is what a code or token stands for.
type grant struct {
	clientID, challenge, redirect, resource string
	scopes                                  []string
	expiry                                  time.Time
	user                                    user
}

// Start starts the server; it stops when the test ends.
func Start(t testing.TB, opt Options) *Server {
	if opt.TokenLifetime == 0 {
		opt.TokenLifetime = time.Hour
	}
	s := &Server{opt: opt, clients: map[string]string{}, redirects: map[string][]string{},
		codes: map[string]grant{}, access: map[string]grant{}, refresh: map[string]grant{},
		user: user{subject: "alice"}}
	s.keys.rotate()
	if opt.PreregisteredID != "" {
		s.clients[opt.PreregisteredID] = opt.PreregisteredSecret
	}
	mcpServer := mcp.NewServer(&mcp.Implementation{Name: "oauthtest", Version: "1"}, nil)
	for _, name := range []string{"echo", "admin"} {
		mcp.AddTool(mcpServer, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil, nil
			})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, nil)))
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", s.resourceMetadata)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if s.opt.OIDCOnly {
			http.NotFound(w, r)
			return
		}
		s.serverMetadata(w, r)
	})
	mux.HandleFunc("/.well-known/openid-configuration", s.serverMetadata)
	mux.HandleFunc("/jwks", s.jwks)
	mux.HandleFunc("/introspect", s.introspect)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/revoke", s.revoke)
	s.srv = httptest.NewServer(mux)
	s.Issuer = s.srv.URL
	s.URL = s.srv.URL + "/mcp"
	if s.opt.Resource == "" {
		s.opt.Resource = s.URL
	}
	s.mcp = mcpServer
	t.Cleanup(s.Close)
	return s
}

// Close stops the server (as Cleanup does), and ends the sessions a
// client left open (one whose token was revoked cannot end its own).
func (s *Server) Close() {
	// Sessions first: a client's standalone GET stream is a request that
	// lasts as long as its session, and srv.Close waits for every request.
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	s.srv.Close()
}

// ExpireAccess makes every access token unknown, as when they expire on
// the server's side before the client expected.
func (s *Server) ExpireAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// RefuseRefresh makes the token endpoint refuse refresh tokens.
func (s *Server) RefuseRefresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseRefresh = true
}

// Count returns the counters under the lock.
func (s *Server) Count() (logins, refreshes, registrations int, revoked []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Logins, s.Refreshes, s.Registrations, slices.Clone(s.Revoked)
}

func (s *Server) challenge(w http.ResponseWriter, status int, errCode, desc string, scopes []string) {
	params := []string{fmt.Sprintf("resource_metadata=%q", s.Issuer+"/.well-known/oauth-protected-resource/mcp")}
	if errCode != "" {
		params = append(params, fmt.Sprintf("error=%q", errCode), fmt.Sprintf("error_description=%q", desc))
	}
	if len(scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, desc, status)
}

// protect lets a request with a live token through, and checks the
// step-up scope on a call of the tool admin.
func (s *Server) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		g, live := s.access[tok]
		s.mu.Unlock()
		if !ok || !live || time.Now().After(g.expiry) {
			s.challenge(w, http.StatusUnauthorized, "invalid_token", "log in first", s.opt.Scopes)
			return
		}
		if s.opt.StepUpScope != "" && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			_ = json.Unmarshal(body, &msg)
			if msg.Method == "tools/call" && msg.Params.Name == "admin" && !slices.Contains(g.scopes, s.opt.StepUpScope) {
				s.challenge(w, http.StatusForbidden, "insufficient_scope", "admin needs "+s.opt.StepUpScope,
					append(slices.Clone(s.opt.Scopes), s.opt.StepUpScope))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) resourceMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"resource": s.URL, "authorization_servers": []string{s.Issuer}, "scopes_supported": s.opt.Scopes})
}

func (s *Server) serverMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer": s.Issuer, "authorization_endpoint": s.Issuer + "/authorize", "token_endpoint": s.Issuer + "/token",
		"registration_endpoint": s.Issuer + "/register", "revocation_endpoint": s.Issuer + "/revoke",
		"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"authorization_response_iss_parameter_supported": true,
		"scopes_supported":                               append(slices.Clone(s.opt.Scopes), "offline_access"),
		"jwks_uri":                                       s.Issuer + "/jwks",
		"introspection_endpoint":                         s.Issuer + "/introspect",
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var meta struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	s.mu.Lock()
	s.Registrations++
	id := fmt.Sprintf("dyn-%d", s.Registrations)
	s.clients[id] = ""
	s.redirects[id] = meta.RedirectURIs
	s.mu.Unlock()
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	clientID, redirect := q.Get("client_id"), q.Get("redirect_uri")
	s.mu.Lock()
	_, known := s.clients[clientID]
	allowed := s.redirects[clientID]
	s.mu.Unlock()
	ru, err := url.Parse(redirect)
	switch {
	case !known:
		http.Error(w, "unknown client_id", 400)
		return
	case err != nil || ru.Hostname() != "127.0.0.1" || (allowed != nil && !slices.Contains(allowed, redirect)):
		http.Error(w, "redirect_uri not allowed", 400)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE S256 required", 400)
		return
	case q.Get("resource") != s.opt.Resource:
		http.Error(w, "resource must be "+s.opt.Resource, 400)
		return
	}
	code := randomText()
	s.mu.Lock()
	s.codes[code] = grant{clientID: clientID, challenge: q.Get("code_challenge"), redirect: redirect,
		resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope")), user: s.user}
	s.mu.Unlock()
	iss := s.Issuer
	if s.opt.WrongIss {
		iss = "https://elsewhere.example"
	}
	v := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {iss}}
	http.Redirect(w, r, redirect+"?"+v.Encode(), http.StatusFound)
}

// clientOK checks the client's authentication at the token endpoint.
func (s *Server) clientOK(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	want, known := s.clients[id]
	s.mu.Unlock()
	return id, known && secret == want
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	clientID, ok := s.clientOK(r)
	if !ok {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var g grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, found := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !found || c.clientID != clientID || c.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.PostForm.Get("resource") != s.opt.Resource {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		s.Logins++
		g = c
	case "refresh_token":
		old, found := s.refresh[r.PostForm.Get("refresh_token")]
		delete(s.refresh, r.PostForm.Get("refresh_token"))
		if !found || s.refuseRefresh || old.clientID != clientID {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "refresh token refused"})
			return
		}
		s.Refreshes++
		g = old
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	g.expiry = time.Now().Add(s.opt.TokenLifetime)
	access, refresh := "at-"+randomText(), "rt-"+randomText()
	if s.opt.JWT {
		access = s.keys.sign(s.claimsOf(g))
	}
	s.access[access] = g
	s.refresh[refresh] = g
	writeJSON(w, 200, map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(s.opt.TokenLifetime.Seconds()), "scope": strings.Join(g.scopes, " ")})
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	s.Revoked = append(s.Revoked, tok)
	delete(s.access, tok)
	delete(s.refresh, tok)
	s.mu.Unlock()
	w.WriteHeader(200)
}

func randomText() string { return rand.Text() }

// Follow is a browser that agrees at once: it fetches u and follows the
// redirects to the login's callback.
func Follow(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	// A client of its own, whose connections are closed when it is done:
	// tests check that no goroutine outlives them.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("the login ended with %s", resp.Status)
	}
	return nil
}
