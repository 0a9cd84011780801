package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/logins"
	"github.com/dsh-host/dsh-host/services/tools"
)

// freeLoopbackAddr returns a 127.0.0.1 address no one listens on, for a
// gateway whose audience (its URL) must be known before it starts.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// clientHost is an in-process dsh-host whose mcp-client instances log in
// with a browser that agrees at once (the in-repo issuer's).
type clientHost struct {
	t    *testing.T
	h    *host.Host
	logs *mcptest.SyncBuffer
}

func newClientHost(t *testing.T) *clientHost {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	c := &clientHost{t: t, logs: &mcptest.SyncBuffer{}}
	c.h = host.New(&host.Options{Logger: slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelDebug})), DisposeTimeout: wait})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
		defer cancel()
		if err := c.h.Shutdown(ctx); err != nil {
			t.Errorf("client host shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("client host log:\n%s", c.logs)
		}
	})
	c.apply()
	reg, ok := host.Lookup(c.h, logins.Key)
	if !ok {
		t.Fatal("no logins service")
	}
	t.Cleanup(reg.AllowBrowser(&logins.BrowserStep{Out: &mcptest.SyncBuffer{}, Open: oauthtest.Follow}))
	return c
}

func (c *clientHost) apply(entries ...host.Entry) {
	c.t.Helper()
	comp := &host.Composition{File: "client.yml", Entries: append([]host.Entry{{
		ID: "attachments", Name: "attachments", Config: map[string]any{"dir": filepath.Join(c.t.TempDir(), "att")},
	}}, entries...)}
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*wait)
	defer cancel()
	if err := c.h.Update(ctx, comp); err != nil {
		c.t.Fatalf("apply: %v", err)
	}
}

func (c *clientHost) registry() *tools.Registry {
	reg, ok := host.Lookup(c.h, tools.Key)
	if !ok {
		c.t.Fatal("no tools service")
	}
	return reg
}

// TestE2ETeamGateway: `dsh-host serve --http` with an auth block and a
// policy by group. dsh-host's own mcp-client, configured with another
// scope than the gateway requires, discovers the issuer from the 401,
// logs in, steps up at the 403 insufficient_scope, lists and calls as
// alice (admins); bob (devs) does not see the admins' tool and is denied
// it; the audit trail names each.
func TestE2ETeamGateway(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	addr := freeLoopbackAddr(t)
	gwURL := "http://" + addr + "/mcp"
	as := oauthtest.Start(t, oauthtest.Options{JWT: true, Resource: gwURL})
	as.SetUser("alice", "admins")
	writeFile(t, e.composition, e.fixtureEntry()+fmt.Sprintf(`  - id: secret
    name: mcp-client
    config:
      serverName: sx
      transport: stdio
      command: %q
      args: ["-cancel-file", %q, "-resources", "1", "-prompts"]
      sandbox: {write: [%q]}
  - id: policy
    name: policy
    config:
      rules:
        - tools: [mcp__fx__shout]
          when: '"admins" in caller.groups'
          action: allow
        - tools: [mcp__fx__shout]
          action: deny
        - servers: [sx]
          when: '"admins" in caller.groups'
          action: allow
        - servers: [sx]
          action: deny
  - id: gateway
    name: gateway
    config:
      http: %q
      auth:
        issuer: %q
        audience: %q
        requiredScopes: [mcp]
`, e.fixture, e.cancelFile, e.events, addr, as.Issuer, gwURL))
	e.serveHTTPProc(t, bin, nil)

	c := newClientHost(t)
	c.apply(host.Entry{ID: "gw", Name: "mcp-client", Config: map[string]any{
		"serverName": "gw", "transport": "streamable-http", "url": gwURL,
		"oauth": map[string]any{"scopes": []string{"openid"}},
	}})
	if st := host.Find(c.h.Status(), "gw"); st.State != host.StateActive {
		t.Fatalf("the client's gw instance is %s (%s)", st.State, st.Err)
	}
	shout := mcpclient.PublicToolName("gw", "mcp__fx__shout")
	var names []string
	for _, d := range c.registry().List(tools.Caller{Kind: "test"}) {
		names = append(names, d.Name)
	}
	if !slices.Contains(names, shout) || !slices.Contains(names, mcpclient.PublicToolName("gw", "mcp__fx__greet")) {
		t.Fatalf("alice's tools through the gateway: %v", names)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	res := c.registry().Execute(ctx, tools.Caller{Kind: "test"}, shout, []byte(`{"text":"hi"}`))
	if res.Err != nil || res.Failed || len(res.Content) == 0 || res.Content[0].Text != "HI" {
		t.Fatalf("alice calls shout: %+v", res)
	}
	logins, _, _, _ := as.Count()
	if logins != 2 {
		t.Errorf("%d logins, want 2: the first with the configured scope, a step-up for mcp", logins)
	}

	// bob, in devs, with a token of the same issuer.
	tr := &mcp.StreamableClientTransport{Endpoint: gwURL, DisableStandaloneSSE: true,
		HTTPClient: bearerClient(t, as.Sign(as.Claims("bob", []string{"devs"}, "mcp")))}
	bob, err := mcp.NewClient(&mcp.Implementation{Name: "bob", Version: "0"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	lr, err := bob.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var bobs []string
	for _, tool := range lr.Tools {
		bobs = append(bobs, tool.Name)
	}
	if slices.Contains(bobs, "mcp__fx__shout") || !slices.Contains(bobs, "mcp__fx__greet") {
		t.Errorf("bob lists %v: want greet, not shout", bobs)
	}
	text, isErr := authCall(t, bob, "mcp__fx__shout", map[string]any{"text": "hi"})
	if !isErr || !strings.Contains(text, "denied by policy") {
		t.Errorf("bob calls shout: %q (isError %v), want a policy denial", text, isErr)
	}

	// sx's resources and prompts are the admins' only, as its tools are.
	adminTr := &mcp.StreamableClientTransport{Endpoint: gwURL, DisableStandaloneSSE: true,
		HTTPClient: bearerClient(t, as.Sign(as.Claims("alice", []string{"admins"}, "mcp")))}
	admin, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "0"}, nil).Connect(t.Context(), adminTr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const doc = "fixture://doc/001"
	for _, who := range []struct {
		name string
		cs   *mcp.ClientSession
		sees bool
	}{{"alice", admin, true}, {"bob", bob, false}} {
		rl, err := who.cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		hasDoc := slices.ContainsFunc(rl.Resources, func(r *mcp.Resource) bool { return r.URI == doc })
		tl, err := who.cs.ListResourceTemplates(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := who.cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, readErr := who.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: doc})
		if hasDoc != who.sees || (len(tl.ResourceTemplates) > 0) != who.sees || (len(pl.Prompts) > 0) != who.sees || (readErr == nil) != who.sees {
			t.Errorf("%s: lists %s %v, %d templates, %d prompts, read error %v; want all of sx's: %v",
				who.name, doc, hasDoc, len(tl.ResourceTemplates), len(pl.Prompts), readErr, who.sees)
		}
	}

	// The audit trail names who called.
	var trail string
	waitFor(t, "the audit records", func() bool {
		files, _ := filepath.Glob(filepath.Join(e.home, "audit", "*"))
		trail = ""
		for _, f := range files {
			b, _ := os.ReadFile(f)
			trail += string(b)
		}
		return strings.Contains(trail, `"subject":"alice"`) && strings.Contains(trail, `"subject":"bob"`)
	})
}

// bearerClient is an HTTP client that sends token and leaves no
// connection behind.
func bearerClient(t *testing.T, token string) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: &tokenTransport{token: token, base: tr}, Timeout: time.Minute}
}

// TestE2ENoTokenPassthrough: the caller's bearer token reaches neither an
// upstream server over HTTP (which gets the gateway's own credentials)
// nor a stdio server's environment.
func TestE2ENoTokenPassthrough(t *testing.T) {
	bin := dshHostBinary(t)
	e := newE2E(t)
	// The upstream records every header value it is sent.
	var (
		mu   sync.Mutex
		seen []string
	)
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "0"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream ok"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for name, values := range r.Header {
			for _, v := range values {
				seen = append(seen, name+": "+v)
			}
		}
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	defer upstream.Close()
	defer func() {
		for ss := range up.Sessions() {
			ss.Close()
		}
	}()

	addr := freeLoopbackAddr(t)
	gwURL := "http://" + addr + "/mcp"
	as := oauthtest.Start(t, oauthtest.Options{JWT: true, Resource: gwURL})
	writeFile(t, e.composition, e.fixtureEntry()+fmt.Sprintf(`  - id: up
    name: mcp-client
    config:
      serverName: up
      transport: streamable-http
      url: %q
      headers:
        Authorization: Bearer the-gateway-s-own
  - id: gateway
    name: gateway
    config:
      http: %q
      auth:
        issuer: %q
        audience: %q
`, upstream.URL+"/mcp", addr, as.Issuer, gwURL))
	e.serveHTTPProc(t, bin, nil)

	token := as.Sign(as.Claims("alice", []string{"admins"}))
	tr := &mcp.StreamableClientTransport{Endpoint: gwURL, DisableStandaloneSSE: true, HTTPClient: bearerClient(t, token)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "0"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, isErr := authCall(t, cs, "mcp__up__echo", nil); isErr || text != "upstream ok" {
		t.Fatalf("upstream echo: %q (isError %v)", text, isErr)
	}
	env, isErr := authCall(t, cs, "mcp__fx__env", nil)
	if isErr || !strings.Contains(env, "PATH=") {
		t.Fatalf("fixture env: %q", env)
	}
	if strings.Contains(env, token) {
		t.Errorf("the caller's token is in the stdio server's environment")
	}
	mu.Lock()
	defer mu.Unlock()
	var auths []string
	for _, h := range seen {
		if strings.Contains(h, token) || strings.Contains(h, token[len(token)-20:]) {
			t.Errorf("the upstream received the caller's token: %.60s…", h)
		}
		if strings.HasPrefix(h, "Authorization: ") {
			auths = append(auths, h)
		}
	}
	if len(auths) == 0 {
		t.Fatal("the upstream saw no Authorization header: the gateway's own credentials did not reach it")
	}
	for _, h := range auths {
		if h != "Authorization: Bearer the-gateway-s-own" {
			t.Errorf("upstream got %q, want the gateway's own credentials", h)
		}
	}
}
