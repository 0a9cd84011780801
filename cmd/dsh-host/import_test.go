package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/import")

// runIn runs a subcommand in-process and returns its exit code, stdout and
// stderr.
func runIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

// TestImportGolden converts real-world-shaped client configs (Claude Code,
// Claude Desktop, Cursor, VS Code) and compares stdout and the notes on
// stderr with testdata/import/<name>.yaml and <name>.notes.
func TestImportGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/import/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range files {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runIn(t, "", "import", in)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			golden(t, strings.TrimSuffix(in, ".json")+".yaml", stdout)
			golden(t, strings.TrimSuffix(in, ".json")+".notes", stderr)

			// The output is a composition by itself: it parses, and every
			// entry is an mcp-client with a valid id equal to its serverName.
			var c struct {
				Plugins []struct {
					ID     string         `yaml:"id"`
					Name   string         `yaml:"name"`
					Config map[string]any `yaml:"config"`
				} `yaml:"plugins"`
			}
			if err := yaml.Unmarshal([]byte(stdout), &c); err != nil {
				t.Fatalf("output does not parse: %v", err)
			}
			for _, p := range c.Plugins {
				if p.Name != "mcp-client" || p.Config["serverName"] != p.ID || sanitizeID(p.ID) != p.ID {
					t.Errorf("entry %+v: want name mcp-client and a valid id equal to serverName", p)
				}
			}
		})
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestImportErrors(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no file", "", []string{"import"}, exitUsage, "want one file"},
		{"not json", "nope", []string{"import", "-"}, exitFail, "not a JSON object"},
		{"no server list", `{"editor.fontSize": 12}`, []string{"import", "-"}, exitFail, `found no "mcpServers"`},
		{"only sse", `{"mcpServers":{"old":{"type":"sse","url":"http://127.0.0.1:1/sse"}}}`, []string{"import", "-"}, exitFail, "no server could be imported"},
		{"neither command nor url", `{"mcpServers":{"x":{"args":["a"]}}}`, []string{"import", "-"}, exitFail, "neither a command"},
		{"bad args type", `{"mcpServers":{"x":{"command":"a","args":"b"}}}`, []string{"import", "-"}, exitFail, `skipped "x": args`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runIn(t, tt.input, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
}

// TestImportVSCodeSettings reads the "mcp" key of a VS Code settings.json.
func TestImportVSCodeSettings(t *testing.T) {
	code, stdout, stderr := runIn(t, `{"editor.tabSize": 2, "mcp": {"servers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}}`, "import", "-")
	if code != exitOK || !strings.Contains(stdout, "id: time") || !strings.Contains(stdout, "args: [mcp-server-time]") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

const importJSON = `{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}`

const importedTime = `  # Imported from - by dsh-host import.
  - id: time
    name: mcp-client
    config:
      serverName: time
      transport: stdio
      command: uvx
      args: [mcp-server-time]
`

// TestImportWrite appends to compositions of several shapes and checks the
// exact text: what was there (comments included) is kept byte for byte.
func TestImportWrite(t *testing.T) {
	tests := []struct {
		name string
		orig string // "" means no file
		want string
	}{
		{
			name: "plugins last",
			orig: "# my servers\nplugins:\n  - id: fold # folding\n    name: mcp-fold\n\n",
			want: "# my servers\nplugins:\n  - id: fold # folding\n    name: mcp-fold\n" + importedTime + "\n",
		},
		{
			name: "key after plugins",
			orig: "plugins:\n- id: fold\n  name: mcp-fold\n\n# trailing settings\nother: 1\n",
			want: "plugins:\n- id: fold\n  name: mcp-fold\n" + reindent(importedTime, "") + "\n# trailing settings\nother: 1\n",
		},
		{
			name: "empty plugins",
			orig: "# nothing yet\nplugins:\nother: true\n",
			want: "# nothing yet\nplugins:\n" + importedTime + "other: true\n",
		},
		{
			name: "no plugins key",
			orig: "# just a comment\nother: true",
			want: "# just a comment\nother: true\nplugins:\n" + importedTime,
		},
		{
			name: "no file",
			orig: "",
			want: "# Imported from - by dsh-host import.\n\nplugins:\n" + strings.SplitN(importedTime, "\n", 2)[1],
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "composition.yml")
			if tt.orig != "" {
				if err := os.WriteFile(file, []byte(tt.orig), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, stderr := runIn(t, importJSON, "import", "-", "--write", "-c", file)
			if code != exitOK {
				t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "appended 1 entries (time)") {
				t.Errorf("stdout = %q", stdout)
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
			if tt.orig != "" {
				if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("mode = %v, %v; want the file's own 0600", fi.Mode(), err)
				}
			}
		})
	}
}

func reindent(s, indent string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(indent + strings.TrimPrefix(l, "  "))
		}
	}
	return b.String()
}

// TestImportWriteRefuses leaves the file untouched when an id or serverName
// is taken, or when the file cannot be appended to safely.
func TestImportWriteRefuses(t *testing.T) {
	tests := []struct {
		name, orig, wantErr string
	}{
		{"duplicate id", "plugins:\n  - id: time\n    name: greeter\n", `composition.yml:2: "time" is already there`},
		{"duplicate serverName", "plugins:\n  - id: clock\n    name: mcp-client\n    config:\n      serverName: time\n", `composition.yml:2: "time" is already there`},
		{"flow list", "plugins: [{id: a, name: greeter}]\n", "plugins is a flow list"},
		{"not a list", "plugins: {a: 1}\n", "plugins is not a list"},
		{"bad yaml", "plugins:\n  - id: [\n", "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "composition.yml")
			if err := os.WriteFile(file, []byte(tt.orig), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runIn(t, importJSON, "import", "-", "--write", "-c", file)
			if code != exitFail || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, tt.wantErr)
			}
			got, _ := os.ReadFile(file)
			if string(got) != tt.orig {
				t.Errorf("file changed to:\n%s", got)
			}
		})
	}
}

func TestSanitizeID(t *testing.T) {
	taken := map[string]bool{}
	tests := []struct{ in, want string }{
		{"github", "github"},
		{"Brave Search", "Brave_Search"},
		{"@scope/pkg.name", "scope_pkg_name"},
		{"!!!", "server"},
		{strings.Repeat("a", 40), strings.Repeat("a", 32)},
		{strings.Repeat("a", 40), strings.Repeat("a", 30) + "_2"},
		{"github", "github_2"},
	}
	for _, tt := range tests {
		if got := uniqueID(sanitizeID(tt.in), taken); got != tt.want {
			t.Errorf("uniqueID(sanitizeID(%q)) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
