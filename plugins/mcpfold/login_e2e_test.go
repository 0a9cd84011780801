package mcpfold_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/services/logins"
	_ "github.com/dsh-host/dsh-host/services/logins"
)

// TestE2EMCPLogin: a server that needs an OAuth login, in a host where no
// browser step runs by itself, waits with no tools and shows in /mcp with
// the hint; /mcp login web runs the browser step (a browser that agrees at
// once), and the server connects by itself from the stored token.
func TestE2EMCPLogin(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DSH_HOME", filepath.Join(dir, "home"))
	as := oauthtest.Start(t, oauthtest.Options{Scopes: []string{"read"}})
	fixture := mcptest.FixtureBinary(t)
	entries := []host.Entry{
		{ID: "settings", Name: "settings", Config: map[string]any{"file": filepath.Join(dir, "settings.json")}},
		{ID: "web", Name: "mcp-client", Config: map[string]any{"serverName": "web", "transport": "streamable-http", "url": as.URL}},
		{ID: "machine", Name: "mcp-client", Config: map[string]any{"serverName": "machine", "transport": "streamable-http", "url": as.URL,
			"oauth": map[string]any{"grant": "client_credentials", "clientId": "m", "clientSecret": "s"}}},
		{ID: "local", Name: "mcp-client", Config: map[string]any{"serverName": "local", "transport": "stdio", "command": fixture}},
		{ID: "fold", Name: "mcp-fold", Config: map[string]any{}},
	}
	eh := startHost(t, entries, fixture)

	if r := eh.command("/mcp"); r.Error || !strings.Contains(r.Text, "web — needs login — run: dsh-host login web") || !strings.Contains(r.Text, "/mcp login web") {
		t.Fatalf("/mcp does not show web waiting for a login with the hint:\n%s", r.Text)
	}
	if names := webTools(eh); len(names) != 0 {
		t.Fatalf("web has tools before the login: %v", names)
	}

	for line, want := range map[string]string{
		"/mcp login nosuch":  `no running MCP server is named "nosuch"`,
		"/mcp login local":   `server "local" has no OAuth login`,
		"/mcp login 99":      "no MCP server carries id 99",
		"/mcp login machine": "machine uses grant client_credentials: it logs in by itself, with no browser step",
	} {
		if r := eh.command(line); !r.Error || !strings.Contains(r.Text, want) {
			t.Errorf("%s = %v %q, want an error with %q", line, r.Error, r.Text, want)
		}
	}

	// The front end lets the browser open now: a person asked.
	shown := &mcptest.SyncBuffer{}
	reg, ok := host.Lookup(eh.h, logins.Key)
	if !ok {
		t.Fatal("the logins service is not running")
	}
	t.Cleanup(reg.AllowBrowser(&logins.BrowserStep{Out: shown, Open: oauthtest.Follow}))
	r := eh.command("/mcp login web")
	if r.Error || !strings.Contains(r.Text, "web: logged in (scopes ") || !strings.Contains(r.Text, as.Issuer+"/authorize?") {
		t.Fatalf("/mcp login web = %v\n%s", r.Error, r.Text)
	}
	if !strings.Contains(shown.String(), as.Issuer+"/authorize?") {
		t.Errorf("the front end's stream did not show the authorization URL:\n%s", shown)
	}
	// The tools are registered before the instance's detail moves on
	// from the login wait (resources and prompts are listed in between):
	// wait for both.
	deadline := time.Now().Add(e2eWait)
	for {
		tools, r := webTools(eh), eh.command("/mcp")
		if len(tools) == 2 && !strings.Contains(r.Text, "needs login") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web has tools %v after the login, want 2; /mcp:\n%s", tools, r.Text)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if logins, _, _, _ := as.Count(); logins != 1 {
		t.Errorf("%d logins, want 1", logins)
	}

	// Now that web has tools it has an id, which names it too.
	m := regexp.MustCompile(`\[(\d+)\] web \(2\)`).FindStringSubmatch(eh.command("/mcp").Text)
	if m == nil {
		t.Fatalf("no id for web in /mcp:\n%s", eh.command("/mcp").Text)
	}
	if r := eh.command("/mcp login " + m[1]); r.Error || !strings.Contains(r.Text, "web: logged in") {
		t.Errorf("/mcp login %s = %v %q", m[1], r.Error, r.Text)
	}

	// The offer goes away with the instance.
	eh.apply(slices.DeleteFunc(entries, func(e host.Entry) bool { return e.ID == "web" }))
	if r := eh.command("/mcp login web"); !r.Error || !strings.Contains(r.Text, `no running MCP server is named "web"`) {
		t.Errorf("/mcp login web after web was removed = %v %q", r.Error, r.Text)
	}
}

func webTools(eh *e2eHost) []string {
	var out []string
	for _, d := range eh.registry().List(model) {
		if d.Origin.Server == "web" {
			out = append(out, d.Name)
		}
	}
	return out
}
