package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
)

// TestLoginLogout logs in to a loopback authorization server end to end:
// `login` runs the browser step (a browser that agrees at once), `tools`
// then connects with the stored token and no second login, and `logout`
// deletes and revokes it.
func TestLoginLogout(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	as := oauthtest.Start(t, oauthtest.Options{Scopes: []string{"read"}})
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - id: web
    name: mcp-client
    config: {serverName: web, transport: streamable-http, url: %q}
  - id: local
    name: mcp-client
    config: {serverName: local, transport: stdio, command: /bin/true}
    disabled: true
`, as.URL))

	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"login", "web", "-c", file},
		Stdio{In: strings.NewReader(""), Out: &out, Err: &errb, OpenURL: oauthtest.Follow})
	stdout, stderr := out.String(), errb.String()
	// go-sdk may ask offline_access too, since the server supports it.
	if code != exitOK || !strings.HasPrefix(stdout, "web: logged in (scopes ") || !strings.Contains(stdout, "read") {
		t.Fatalf("login: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, as.Issuer+"/authorize?") {
		t.Errorf("login did not show the authorization URL:\n%s", stderr)
	}

	code, stdout, stderr = runIn(t, "", "tools", "-c", file)
	if code != exitOK || !strings.Contains(stdout, "mcp__web__echo") {
		t.Fatalf("tools after login: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if logins, _, _, _ := as.Count(); logins != 1 {
		t.Errorf("%d logins, want 1: tools should use the stored token", logins)
	}

	code, stdout, _ = runIn(t, "", "logout", "web", "-c", file)
	if code != exitOK || stdout != "logged out of web (token revoked)\n" {
		t.Errorf("logout: exit %d, %q", code, stdout)
	}
	if code, stdout, _ = runIn(t, "", "logout", "web", "-c", file); stdout != "not logged in to web\n" {
		t.Errorf("second logout: exit %d, %q", code, stdout)
	}
}

func TestLoginErrors(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, `plugins:
  - id: local
    name: mcp-client
    config: {serverName: local, transport: stdio, command: /bin/true}
  - id: web
    name: mcp-client
    config: {serverName: web, transport: streamable-http, url: "http://127.0.0.1:1/mcp", headers: {Authorization: Bearer x}}
`)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"login"}, exitUsage, "want one serverName"},
		{[]string{"login", "nope"}, exitFail, `no enabled mcp-client entry with serverName "nope" (it has: [local web])`},
		{[]string{"login", "local"}, exitFail, "only a remote (streamable-http) server logs in"},
		{[]string{"logout", "web"}, exitFail, "has an Authorization header in its config"},
	} {
		code, _, stderr := runIn(t, "", append(tt.args, "-c", file)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
