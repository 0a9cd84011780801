package gateway

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
)

// TestIntrospectionRequiresIssAndAud: an active introspection answer is
// accepted only when it names the configured issuer and this gateway's
// resource in aud; an answer without either is refused (401), as is one
// for another resource server of the same issuer.
func TestIntrospectionRequiresIssAndAud(t *testing.T) {
	f := newAuthFixture(t, authSetup{auth: func(c *AuthConfig) { c.IntrospectionURL = c.Issuer + "/introspect" }})
	cases := []struct {
		name string
		edit func(map[string]any)
		want string // in the challenge; "" when let in
	}{
		{"as issued", nil, ""},
		{"no aud", func(c map[string]any) { delete(c, "aud") }, "names no aud"},
		{"empty aud", func(c map[string]any) { c["aud"] = []any{} }, "names no aud"},
		{"another resource", func(c map[string]any) { c["aud"] = "https://other.example/api" }, "not for this gateway"},
		{"aud list without the gateway", func(c map[string]any) { c["aud"] = []any{"https://other.example/api", "x"} }, "not for this gateway"},
		{"no iss", func(c map[string]any) { delete(c, "iss") }, "names no iss"},
		{"another issuer", func(c map[string]any) { c["iss"] = "https://evil.example" }, "not by"},
		{"active as a string", func(c map[string]any) { c["active"] = "true" }, "not active"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.as.EditIntrospection(tc.edit)
			t.Cleanup(func() { f.as.EditIntrospection(nil) })
			// A fresh token each time: the gateway remembers answers.
			tok := loginDirect(t, f.as, "carol")
			status, challenge, _ := f.post(t, tok, "")
			switch {
			case tc.want == "" && status != 200:
				t.Fatalf("status %d (%s), want 200", status, challenge)
			case tc.want != "" && (status != 401 || !strings.Contains(challenge, tc.want)):
				t.Fatalf("status %d %q, want 401 saying %q", status, challenge, tc.want)
			}
		})
	}
	// The gateway's audience as the only string is one audience.
	f.as.EditIntrospection(func(c map[string]any) { c["aud"] = f.url })
	if status, challenge, _ := f.post(t, loginDirect(t, f.as, "carol"), ""); status != 200 {
		t.Fatalf("aud as a string: status %d (%s)", status, challenge)
	}
}

// TestStringGroupsClaimIsOneGroup: a groups claim sent as a string is one
// group, spaces and all, in a JWT and in an introspection answer.
func TestStringGroupsClaimIsOneGroup(t *testing.T) {
	t.Run("jwt", func(t *testing.T) {
		f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}})
		claims := f.as.Claims("alice", nil)
		claims["groups"] = "Platform Team"
		cs := f.mustConnect(t, f.as.Sign(claims))
		text, _ := authCall(t, cs, "whoami", nil)
		if !strings.Contains(text, `"Groups":["Platform Team"]`) {
			t.Errorf("whoami = %s, want the one group \"Platform Team\"", text)
		}
	})
	t.Run("introspection", func(t *testing.T) {
		f := newAuthFixture(t, authSetup{auth: func(c *AuthConfig) { c.IntrospectionURL = c.Issuer + "/introspect" }})
		f.as.EditIntrospection(func(c map[string]any) { c["groups"] = "Platform Team" })
		cs := f.mustConnect(t, loginDirect(t, f.as, "carol"))
		text, _ := authCall(t, cs, "whoami", nil)
		if !strings.Contains(text, `"Groups":["Platform Team"]`) {
			t.Errorf("whoami = %s, want the one group \"Platform Team\"", text)
		}
	})
}
