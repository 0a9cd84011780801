package mcpservers

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// TestMoveSecrets: inline secrets become ${VAR} references, a variable
// name two servers would share with different values is told apart, and
// values that are no secret, or already a reference, stay.
func TestMoveSecrets(t *testing.T) {
	server := func(name string, env, headers map[string]string) Imported {
		c := mcpclient.Defaults()
		c.ServerName, c.Env, c.Headers = name, env, headers
		return Imported{Config: c}
	}
	servers := []Imported{
		server("a", map[string]string{"API_KEY": "one", "LOG_LEVEL": "debug", "TOKEN": "${T}", "DATABASE_URL": "postgres://u:pw@db/app"}, nil),
		server("b-2", map[string]string{"API_KEY": "two"}, map[string]string{"Authorization": "Bearer xyz", "X-Api-Key": "k", "Accept": "text/plain"}),
		server("c", map[string]string{"API_KEY": "one"}, nil),
	}
	got := MoveSecrets(servers)
	want := []Secret{
		{Var: "API_KEY", Value: "one", Server: "a", Key: "env API_KEY"},
		{Var: "DATABASE_URL", Value: "postgres://u:pw@db/app", Server: "a", Key: "env DATABASE_URL"},
		{Var: "B_2_API_KEY", Value: "two", Server: "b-2", Key: "env API_KEY"},
		{Var: "B_2_TOKEN", Value: "xyz", Server: "b-2", Key: "header Authorization"},
		{Var: "B_2_X_API_KEY", Value: "k", Server: "b-2", Key: "header X-Api-Key"},
		{Var: "API_KEY", Value: "one", Server: "c", Key: "env API_KEY"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	wantEnv := []map[string]string{
		{"API_KEY": "${API_KEY}", "LOG_LEVEL": "debug", "TOKEN": "${T}", "DATABASE_URL": "${DATABASE_URL}"},
		{"API_KEY": "${B_2_API_KEY}"},
		{"API_KEY": "${API_KEY}"},
	}
	for i, s := range servers {
		if diff := cmp.Diff(wantEnv[i], s.Config.Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", s.Config.ServerName, diff)
		}
	}
	if diff := cmp.Diff(map[string]string{"Authorization": "Bearer ${B_2_TOKEN}", "X-Api-Key": "${B_2_X_API_KEY}", "Accept": "text/plain"}, servers[1].Config.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

// TestURLSecrets: a server's url keeps its credentials out of the
// composition, edited as text so the rest stays as written; references
// and URLs without credentials stay.
func TestURLSecrets(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"https://u:p%2Fw@h.example.com/mcp", "https://u:${S_URL_PASSWORD}@h.example.com/mcp"},
		{"https://key@h.example.com/1", "https://${S_URL_USER}@h.example.com/1"},
		{"https://h.example.com/mcp?x=1&access_token=t&API%5FKEY=k#f", "https://h.example.com/mcp?x=1&access_token=${S_ACCESS_TOKEN}&API%5FKEY=${S_API_KEY}#f"},
		{"https://u:${P}@h.example.com/?token=$T", "https://u:${P}@h.example.com/?token=$T"},
		{"https://h.example.com/a@b/mcp?q=a@b", "https://h.example.com/a@b/mcp?q=a@b"},
		{"https://h.example.com/mcp?token=", "https://h.example.com/mcp?token="},
		{"http://127.0.0.1:8931/mcp", "http://127.0.0.1:8931/mcp"},
	} {
		c := mcpclient.Defaults()
		c.ServerName, c.URL = "s", tt.url
		servers := []Imported{{Config: c}}
		MoveSecrets(servers)
		if got := servers[0].Config.URL; got != tt.want {
			t.Errorf("%s became %s, want %s", tt.url, got, tt.want)
		}
	}
}

// TestBareVars: Gemini CLI's $VAR, as a word of a value, becomes ${VAR};
// a $ inside a word is a character of the value.
func TestBareVars(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer $GW_TOKEN": "Bearer ${GW_TOKEN}",
		"$A":               "${A}",
		"$A $B":            "${A} ${B}",
		"pa$word":          "pa$word",
		"Bearer ${X}":      "Bearer ${X}",
		"cost $5":          "cost $5",
		"plain":            "plain",
	} {
		if got := bareVars(in); got != want {
			t.Errorf("bareVars(%q) = %q, want %q", in, got, want)
		}
	}
}
