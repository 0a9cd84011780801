package mcpclient_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/logins"
)

// oauthEntry is an mcp-client entry for the OAuth test server.
func oauthEntry(id, url string, extra map[string]any) host.Entry {
	cfg := map[string]any{"serverName": id, "transport": "streamable-http", "url": url}
	for k, v := range extra {
		cfg[k] = v
	}
	return host.Entry{ID: id, Name: "mcp-client", Config: cfg}
}

// allowBrowser starts the built-in services and lets logins run with a
// browser that agrees at once, as a front end does on the logins service;
// it returns what the login printed.
func (hs *harness) allowBrowser() *mcptest.SyncBuffer {
	out := &mcptest.SyncBuffer{}
	hs.t.Cleanup(hs.allowBrowserStep(&logins.BrowserStep{Out: out, Open: oauthtest.Follow}))
	return out
}

// allowBrowserStep installs b on the host's logins service (starting the
// built-in services first) and returns its removal.
func (hs *harness) allowBrowserStep(b *logins.BrowserStep) (restore func()) {
	hs.t.Helper()
	hs.apply()
	reg, ok := host.Lookup(hs.h, logins.Key)
	if !ok {
		hs.t.Fatal("the logins service is not running")
	}
	return reg.AllowBrowser(b)
}

// storedFiles are the token files under $DSH_HOME/oauth.
func storedFiles(t *testing.T) []string {
	files, _ := filepath.Glob(filepath.Join(os.Getenv("DSH_HOME"), "oauth", "*.json"))
	return files
}

func TestE2EOAuthLoginAtStartThenStoredToken(t *testing.T) {
	hs := newHarness(t)
	as := oauthtest.Start(t, oauthtest.Options{Scopes: []string{"read"}})
	out := hs.allowBrowser()
	hs.apply(oauthEntry("web", as.URL, nil))
	hs.requireActive("web")
	if got := hs.serverTools("web"); len(got) != 2 {
		t.Fatalf("tools after the login: %v", got)
	}
	if res := hs.call(modelCaller, mcpclient.PublicToolName("web", "echo"), nil); text(res) != "echo ok" {
		t.Errorf("echo = %q (%v)", text(res), res.Err)
	}
	// go-sdk may ask offline_access too, since the server supports it.
	if st := hs.status("web"); !strings.Contains(st.Detail, "logged in (scopes ") || !strings.Contains(st.Detail, "read") {
		t.Errorf("status detail %q does not show the login", st.Detail)
	}
	if !strings.Contains(out.String(), as.Issuer+"/authorize?") {
		t.Errorf("the authorization URL was not shown:\n%s", out.String())
	}
	logins, _, registrations, _ := as.Count()
	if logins != 1 || registrations != 1 {
		t.Errorf("%d logins, %d registrations; want 1 and 1", logins, registrations)
	}
	files := storedFiles(t)
	if len(files) != 1 {
		t.Fatalf("token files: %v", files)
	}
	data, _ := os.ReadFile(files[0])
	if runtime.GOOS != "windows" {
		if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
			t.Errorf("token file mode %v", fi.Mode().Perm())
		}
	}
	// No token reaches the log.
	for _, tok := range tokensIn(string(data)) {
		if strings.Contains(hs.logs.String(), tok) {
			t.Errorf("a token is in the log")
		}
	}

	// A new instance uses the stored token: no second login.
	hs.apply()
	hs.apply(oauthEntry("web", as.URL, nil))
	hs.requireActive("web")
	if logins, _, _, _ := as.Count(); logins != 1 {
		t.Errorf("%d logins after a restart, want the stored token used", logins)
	}
}

// tokensIn returns the at-/rt- tokens of the test server found in s.
func tokensIn(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '"' }) {
		if strings.HasPrefix(f, "at-") || strings.HasPrefix(f, "rt-") {
			out = append(out, f)
		}
	}
	return out
}

func TestE2EOAuthNeedsLoginDoesNotBlockOthers(t *testing.T) {
	hs := newHarness(t)
	as := oauthtest.Start(t, oauthtest.Options{})
	other := host.Entry{ID: "fix", Name: "mcp-client", Config: map[string]any{
		"serverName": "fix", "transport": "stdio", "command": mcptest.FixtureBinary(t)}}
	hs.apply(oauthEntry("web", as.URL, nil), other)
	hs.requireActive("fix")
	if got := hs.serverTools("fix"); len(got) == 0 {
		t.Fatal("the other server has no tools")
	}
	st := hs.status("web")
	if st.State != host.StateActive || !strings.Contains(st.Detail, "needs login — run: dsh-host login web") {
		t.Fatalf("web = %q %q, want active with needs login", st.State, st.Detail)
	}
	if got := hs.serverTools("web"); len(got) != 0 {
		t.Errorf("tools of a server that needs a login: %v", got)
	}

	// A login made elsewhere (dsh-host login) lands in the store: the
	// instance connects by itself.
	cfg := mcpclient.Defaults()
	cfg.ServerName, cfg.Transport, cfg.URL = "web", mcpclient.TransportStreamableHTTP, as.URL
	status, err := mcpclient.Login(t.Context(), cfg, &logins.BrowserStep{Open: oauthtest.Follow})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if !strings.HasPrefix(status, "logged in") {
		t.Errorf("Login status %q", status)
	}
	eventually(t, "web connects after the login", func() bool { return len(hs.serverTools("web")) == 2 })

	// Logout deletes the token and revokes it.
	msg, err := mcpclient.Logout(t.Context(), cfg)
	if err != nil || !strings.Contains(msg, "token revoked") {
		t.Fatalf("Logout = %q, %v", msg, err)
	}
	if _, _, _, revoked := as.Count(); len(revoked) != 2 {
		t.Errorf("revoked %d tokens, want the refresh and the access token", len(revoked))
	}
	if files := storedFiles(t); len(files) != 0 {
		t.Errorf("token files left after logout: %v", files)
	}
}

func TestE2EOAuthRefreshAfter401(t *testing.T) {
	hs := newHarness(t)
	as := oauthtest.Start(t, oauthtest.Options{})
	hs.allowBrowser()
	hs.apply(oauthEntry("web", as.URL, nil))
	hs.requireActive("web")
	as.ExpireAccess()
	if res := hs.call(modelCaller, mcpclient.PublicToolName("web", "echo"), nil); text(res) != "echo ok" {
		t.Fatalf("echo after the server dropped the access token = %q (%v)", text(res), res.Err)
	}
	if logins, refreshes, _, _ := as.Count(); logins != 1 || refreshes != 1 {
		t.Errorf("%d logins, %d refreshes; want the refresh token used, no new login", logins, refreshes)
	}
}

func TestE2EOAuthRefusedRefreshNeedsLogin(t *testing.T) {
	hs := newHarness(t)
	as := oauthtest.Start(t, oauthtest.Options{})
	restore := hs.allowBrowserStep(&logins.BrowserStep{Open: oauthtest.Follow})
	hs.apply(oauthEntry("web", as.URL, nil))
	hs.requireActive("web")
	restore() // from now on, as under serve: nobody to log in
	as.ExpireAccess()
	as.RefuseRefresh()
	res := hs.call(modelCaller, mcpclient.PublicToolName("web", "echo"), nil)
	if res.Err == nil {
		t.Fatal("a call without a usable token succeeded")
	}
	eventually(t, "web needs login", func() bool {
		return strings.Contains(hs.status("web").Detail, "needs login")
	})
	if got := hs.serverTools("web"); len(got) != 0 {
		t.Errorf("tools kept while the server needs a login: %v", got)
	}
}

func TestE2EOAuthStepUp(t *testing.T) {
	hs := newHarness(t)
	as := oauthtest.Start(t, oauthtest.Options{Scopes: []string{"read"}, StepUpScope: "admin"})
	hs.allowBrowser()
	hs.apply(oauthEntry("web", as.URL, nil))
	hs.requireActive("web")
	if res := hs.call(modelCaller, mcpclient.PublicToolName("web", "admin"), nil); text(res) != "admin ok" {
		t.Fatalf("admin after a step-up = %q (%v)", text(res), res.Err)
	}
	if logins, _, _, _ := as.Count(); logins != 2 {
		t.Errorf("%d logins, want 2 (the step-up)", logins)
	}
	// The union: read is kept.
	if res := hs.call(modelCaller, mcpclient.PublicToolName("web", "echo"), nil); text(res) != "echo ok" {
		t.Errorf("echo after the step-up = %q (%v)", text(res), res.Err)
	}
}

func TestE2EOAuthNotForAConfiguredHeader(t *testing.T) {
	hs := newHarness(t)
	as := oauthtest.Start(t, oauthtest.Options{})
	hs.allowBrowser()
	hs.apply(oauthEntry("web", as.URL, map[string]any{"headers": map[string]any{"Authorization": "Bearer mine"}}))
	if logins, _, registrations, _ := as.Count(); logins+registrations != 0 {
		t.Errorf("a server with a configured Authorization header was logged in to")
	}
}
