package mcpservers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

func TestConvert(t *testing.T) {
	// withDefaults is the config of a server called s over transport, as
	// edit leaves it.
	withDefaults := func(transport string, edit func(*mcpclient.Config)) mcpclient.Config {
		c := mcpclient.Defaults()
		c.Transport, c.ServerName = transport, "s"
		if transport == mcpclient.TransportStdio {
			c.Command = "npx"
		} else {
			c.URL = "https://example.com/mcp"
		}
		if edit != nil {
			edit(&c)
		}
		return c
	}
	stdio := func(edit func(*mcpclient.Config)) mcpclient.Config {
		return withDefaults(mcpclient.TransportStdio, edit)
	}
	http := func(edit func(*mcpclient.Config)) mcpclient.Config {
		return withDefaults(mcpclient.TransportStreamableHTTP, edit)
	}
	tests := []struct {
		name      string
		entry     string
		want      mcpclient.Config
		disabled  bool
		wantNotes []string
		wantErr   string
	}{
		{name: "stdio by command", entry: `{"command": "npx", "args": ["-y", "pkg"], "env": {"A": "1", "N": 10, "B": true, "Z": null}, "cwd": "/tmp"}`,
			want: stdio(func(c *mcpclient.Config) {
				c.Args, c.Env, c.Cwd = []string{"-y", "pkg"}, map[string]string{"A": "1", "N": "10", "B": "true", "Z": ""}, "/tmp"
			})},
		{name: "stdio by type", entry: `{"type": "stdio", "command": "npx"}`, want: stdio(nil)},
		{name: "http by type", entry: `{"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${T:-}"}}`,
			want: http(func(c *mcpclient.Config) { c.Headers = map[string]string{"Authorization": "Bearer ${T:-}"} })},
		{name: "streamable-http spelled otherwise", entry: `{"transport": "streamableHttp", "serverUrl": "https://example.com/mcp"}`, want: http(nil)},
		{name: "http by url", entry: `{"url": "https://example.com/mcp"}`, want: http(nil)},
		{name: "url ending in /sse", entry: `{"url": "https://example.com/sse/"}`,
			want:      http(func(c *mcpclient.Config) { c.Transport, c.URL = mcpclient.TransportSSE, "https://example.com/sse/" }),
			wantNotes: []string{"the url ends in /sse, which usually means a legacy SSE server: imported with transport: sse; if the server speaks Streamable HTTP, use transport: streamable-http"}},
		{name: "disabled", entry: `{"command": "npx", "disabled": true}`, want: stdio(nil), disabled: true},
		{name: "unknown keys, in key order", entry: `{"command": "npx", "zeta": 1, "autoApprove": []}`, want: stdio(nil),
			wantNotes: []string{`key "autoApprove" has no equivalent and is ignored`, `key "zeta" has no equivalent and is ignored`}},
		{name: "envFile", entry: `{"command": "npx", "envFile": ".env"}`, want: stdio(nil),
			wantNotes: []string{"envFile is not supported: put those variables in the environment of dsh-host, or in env"}},
		{name: "VS Code variables", entry: `{"command": "${userHome}/bin/s", "args": ["${env:HOME}", "${input:api-key}"], "cwd": "${workspaceFolder}"}`,
			want: stdio(func(c *mcpclient.Config) {
				c.Command, c.Args, c.Cwd = "${HOME}/bin/s", []string{"${HOME}", "${API_KEY}"}, "${WORKSPACE_FOLDER:-.}"
			}),
			wantNotes: []string{
				"${workspaceFolder} is the environment variable WORKSPACE_FOLDER here (default: the current directory)",
				`VS Code prompts for input "api-key"; here it is the environment variable API_KEY`,
			}},
		{name: "http fields on stdio dropped", entry: `{"type": "stdio", "command": "npx", "url": "https://x", "headers": {"A": "b"}}`, want: stdio(nil),
			wantNotes: []string{"url and headers are ignored for a stdio server"}},
		{name: "stdio fields on http dropped", entry: `{"type": "http", "url": "https://example.com/mcp", "command": "npx", "args": ["a"]}`, want: http(nil),
			wantNotes: []string{"command, args, env and cwd are ignored for an HTTP server"}},
		{name: "sse", entry: `{"type": "sse", "url": "https://example.com/sse", "headers": {"X-Key": "${K}"}}`,
			want: http(func(c *mcpclient.Config) {
				c.Transport, c.URL, c.Headers = mcpclient.TransportSSE, "https://example.com/sse", map[string]string{"X-Key": "${K}"}
			})},
		{name: "sse without url", entry: `{"type": "sse"}`, wantErr: "HTTP server without a url"},
		{name: "unknown type", entry: `{"type": "ws", "url": "https://example.com"}`, wantErr: `unknown type "ws"`},
		{name: "neither", entry: `{"args": ["a"]}`, wantErr: "neither a command (stdio) nor a url (HTTP)"},
		{name: "stdio without command", entry: `{"type": "stdio"}`, wantErr: "stdio server without a command"},
		{name: "http without url", entry: `{"type": "http"}`, wantErr: "HTTP server without a url"},
		{name: "args not a list", entry: `{"command": "a", "args": "b"}`, wantErr: "args: want a list of strings, not a string"},
		{name: "arg not a string", entry: `{"command": "a", "args": ["b", 1]}`, wantErr: "args: [1]: want a string, not a number"},
		{name: "env not an object", entry: `{"command": "a", "env": ["b"]}`, wantErr: "env: want an object, not a list"},
		{name: "env value an object", entry: `{"command": "a", "env": {"X": {}}}`, wantErr: "env: X: want a string, not an object"},
		{name: "disabled not a boolean", entry: `{"command": "a", "disabled": "yes"}`, wantErr: "disabled: want true or false"},
		{name: "not an object", entry: `["command"]`, wantErr: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := json.NewDecoder(strings.NewReader(tt.entry))
			dec.UseNumber()
			var entry any
			if err := dec.Decode(&entry); err != nil {
				t.Fatal(err)
			}
			imp, err := Convert("s", entry, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, imp.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if imp.Disabled != tt.disabled {
				t.Errorf("disabled = %v", imp.Disabled)
			}
			if diff := cmp.Diff(tt.wantNotes, imp.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			// Variables are the host's to expand; the rest must satisfy
			// the plugin's own check.
			if !strings.Contains(tt.entry, "${") {
				if err := imp.Config.Validate(); err != nil {
					t.Errorf("the plugin rejects the config: %v", err)
				}
			}
		})
	}
}

// TestImportServerRenameNote: the note of a renamed server gives the reason
// it was renamed, a name the rule refuses or one in use.
func TestConvertRenameNote(t *testing.T) {
	taken := func(s string) bool { return s == "tools" || s == "a_b" }
	for name, want := range map[string]string{
		"tools": `"tools" is renamed "tools_2": the id "tools" is in use`,
		"a.b":   `"a.b" is renamed "a_b_2": ids and serverNames match ^[A-Za-z0-9_-]{1,32}$`,
	} {
		imp, err := Convert(name, map[string]any{"command": "npx"}, taken)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{want}, imp.Notes); diff != "" {
			t.Errorf("%s: notes (-want +got):\n%s", name, diff)
		}
	}
}

// TestServerNameFor checks the names it makes against both rules they must
// meet: the plugin's serverName rule and the host's entry id rule (through
// a composition that uses the name as both).
func TestServerNameFor(t *testing.T) {
	taken := map[string]bool{}
	tests := []struct{ in, want string }{
		{"github", "github"},
		{"Brave Search", "Brave_Search"},
		{"@scope/pkg.name", "scope_pkg_name"},
		{"a..b", "a_b"},
		{"-lead-", "lead-"},
		{"!!!", "server"},
		{"ünï", "n"},
		{strings.Repeat("a", 40), strings.Repeat("a", 32)},
		{strings.Repeat("a", 40), strings.Repeat("a", 30) + "_2"},
		{"github", "github_2"},
		{"github", "github_3"},
	}
	var comp bytes.Buffer
	comp.WriteString("plugins:\n")
	for _, tt := range tests {
		got := ServerNameFor(tt.in, func(s string) bool { return taken[s] })
		if got != tt.want {
			t.Errorf("ServerNameFor(%q) = %q, want %q", tt.in, got, tt.want)
		}
		taken[got] = true
		if !mcpclient.ValidServerName(got) {
			t.Errorf("%q does not match the serverName rule", got)
		}
		fmt.Fprintf(&comp, "  - {id: %q, name: x}\n", got)
	}
	if _, err := host.ParseComposition("c.yml", comp.Bytes(), nil); err != nil {
		t.Errorf("a name is no valid entry id: %v", err)
	}
}

// TestGeminiBareVars: Gemini CLI's $VAR, which it expands in every string,
// becomes ${VAR} where it is a whole word of a header or env value, a
// whole argument, or starts a part of the url; a $ inside a word stays.
func TestGeminiBareVars(t *testing.T) {
	imp, err := Convert("g", map[string]any{
		"httpUrl": "https://h.example.com/$TENANT/mcp?key=$KEY&x=a$b",
		"headers": map[string]any{"Authorization": "Bearer $GW_TOKEN", "X-Pass": "pa$word"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://h.example.com/${TENANT}/mcp?key=${KEY}&x=a$b"; imp.Config.URL != want {
		t.Errorf("url %s, want %s", imp.Config.URL, want)
	}
	if diff := cmp.Diff(map[string]string{"Authorization": "Bearer ${GW_TOKEN}", "X-Pass": "pa$word"}, imp.Config.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	imp, err = Convert("g", map[string]any{"command": "node", "args": []any{"--token", "$TOKEN", "a$b"}, "env": map[string]any{"K": "$K"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--token", "${TOKEN}", "a$b"}, imp.Config.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if imp.Config.Env["K"] != "${K}" {
		t.Errorf("env K = %q, want ${K}", imp.Config.Env["K"])
	}
}
