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

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
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
// Claude Desktop, Cursor, VS Code, Gemini CLI, opencode, Codex) and compares stdout and the notes on
// stderr with testdata/import/<name>.yaml and <name>.notes.
func TestImportGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/import/*.json")
	tomls, _ := filepath.Glob("testdata/import/*.toml") // Codex's config.toml
	files = append(files, tomls...)
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range files {
		ext := filepath.Ext(in)
		name := strings.TrimSuffix(filepath.Base(in), ext)
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runIn(t, "", "import", in)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			golden(t, strings.TrimSuffix(in, ext)+".yaml", stdout)
			golden(t, strings.TrimSuffix(in, ext)+".notes", stderr)

			// The output is a composition by itself, which the host's own
			// check accepts, and every entry's id is its serverName.
			c := checkComposition(t, strings.TrimSuffix(in, ext)+".yaml", stdout)
			for _, e := range c.Entries {
				var cfg mcpclient.Config
				if data, err := yaml.Marshal(e.Config); err != nil || yaml.Unmarshal(data, &cfg) != nil || e.Name != mcpclient.PluginName || cfg.ServerName != e.ID {
					t.Errorf("entry %+v: want an mcp-client whose serverName is its id", e)
				}
			}
		})
	}
}

// checkComposition parses data with the host's parser and runs the host's
// check on it, which decodes and validates every entry's config with its
// plugin. Every ${VAR} is set.
func checkComposition(t *testing.T, file, data string) *host.Composition {
	t.Helper()
	c, err := host.ParseComposition(file, []byte(data), func(name string) (string, bool) { return "value-of-" + name, true })
	if err != nil {
		t.Fatalf("the host does not parse the output: %v\n%s", err, data)
	}
	if err := host.Check(c); err != nil {
		t.Fatalf("the host's check rejects the output: %v\n%s", err, data)
	}
	return c
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
		{"neither json nor toml", "nope", []string{"import", "-"}, exitFail, "neither a JSON object"},
		{"toml without servers", "model = \"o3\"\n", []string{"import", "-"}, exitFail, "found no [mcp_servers.NAME] table"},
		{"no server list", `{"editor.fontSize": 12}`, []string{"import", "-"}, exitFail, `found no "mcpServers"`},
		{"neither command nor url", `{"mcpServers":{"x":{"args":["a"]}}}`, []string{"import", "-"}, exitFail, "neither a command"},
		{"bad args type", `{"mcpServers":{"x":{"command":"a","args":"b"}}}`, []string{"import", "-"}, exitFail, `skipped "x": args: want a list of strings`},
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
      transport: stdio
      serverName: time
      command: uvx
      args: [mcp-server-time]
`

// TestImportWrite appends to a composition, or writes a new one, and checks
// the exact text: what was there (comments included) is kept byte for byte.
// yamledit's tests cover the other shapes of file.
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
			checkComposition(t, file, string(got))
			if tt.orig != "" {
				if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("mode = %v, %v; want the file's own 0600", fi.Mode(), err)
				}
			}
		})
	}
}

// TestImportWriteRefuses leaves the file untouched when an id or serverName
// is taken, or when the file cannot be appended to safely.
func TestImportWriteRefuses(t *testing.T) {
	tests := []struct {
		name, orig, wantErr string
	}{
		{"duplicate id", "plugins:\n  - id: time\n    name: greeter\n", `composition.yml:2: "time" is already there`},
		{"duplicate serverName", "plugins:\n  - id: clock\n    name: mcp-client\n    config:\n      serverName: time\n      transport: stdio\n      command: uvx\n", `composition.yml:2: "time" is already there`},
		// Decoded as run decodes it: a misspelt serverName hides nothing.
		{"misspelt key", "plugins:\n  - id: clock\n    name: mcp-client\n    config:\n      serverNmae: time\n      transport: stdio\n      command: uvx\n", `composition.yml:5: entry "clock": config key serverNmae: unknown key; did you mean serverName?`},
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

const importTwo = `{"mcpServers": {
  "time": {"command": "uvx", "args": ["mcp-server-time"]},
  "web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:WEB_TOKEN}"}}
}}`

// TestImportWriteDir writes one file per server, each a composition the
// host accepts on its own, and leaves the composition alone.
func TestImportWriteDir(t *testing.T) {
	tmp := t.TempDir()
	comp := filepath.Join(tmp, "composition.yml")
	const compText = "plugins:\n  - id: fold\n    name: mcp-fold\n"
	if err := os.WriteFile(comp, []byte(compText), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "composition.d") // created by import
	code, stdout, stderr := runIn(t, importTwo, "import", "-", "--write", "--dir", dir, "-c", comp)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	for _, id := range []string{"time", "web"} {
		file := filepath.Join(dir, id+".yml")
		if !strings.Contains(stdout, file) {
			t.Errorf("stdout %q does not name %s", stdout, file)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c := checkComposition(t, file, string(data))
		if len(c.Entries) != 1 || c.Entries[0].ID != id {
			t.Errorf("%s holds %+v, want the one entry %s", file, c.Entries, id)
		}
	}
	want := "# Imported from - by dsh-host import.\n\nplugins:\n" + strings.SplitN(importedTime, "\n", 2)[1]
	if got, _ := os.ReadFile(filepath.Join(dir, "time.yml")); string(got) != want {
		t.Errorf("time.yml:\n%s\nwant:\n%s", got, want)
	}
	if got, _ := os.ReadFile(comp); string(got) != compText {
		t.Errorf("the composition changed:\n%s", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in %s, want 2", len(ents), dir)
	}
}

// TestImportWriteDirRefuses writes nothing when a file is there already, or
// an id is used by the composition (its included files too) or by another
// file of the directory.
func TestImportWriteDirRefuses(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // relative to the composition's directory
		wantErr string
	}{
		{"file exists", map[string]string{"composition.d/time.yml": "plugins: []\n"}, "time.yml exists"},
		{"id in the composition", map[string]string{"composition.yml": "plugins:\n  - id: fold\n    name: mcp-fold\n  - id: web\n    name: greeter\n"},
			`composition.yml:4: "web" is already there`},
		{"serverName in the composition", map[string]string{"composition.yml": "plugins:\n  - id: clock\n    name: mcp-client\n    config:\n      serverName: time\n      transport: stdio\n      command: uvx\n"},
			`composition.yml:2: "time" is already there`},
		{"id in an included file", map[string]string{"composition.yml": "include: [more/*.yml]\nplugins: []\n", "more/a.yml": "plugins:\n  - id: web\n    name: greeter\n"},
			`a.yml:2: "web" is already there`},
		{"id in another file of the directory", map[string]string{"composition.d/mine.yml": "plugins:\n  - id: web\n    name: greeter\n"},
			`mine.yml:2: "web" is already there`},
		{"a file that does not parse", map[string]string{"composition.d/bad.yml": "plugins: [\n"}, "bad.yml does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "composition.d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			inDir := 0
			for name, text := range tt.files {
				path := filepath.Join(tmp, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				if filepath.Dir(path) == dir {
					inDir++
				}
			}
			code, _, stderr := runIn(t, importTwo, "import", "-", "--write", "--dir", dir, "-c", filepath.Join(tmp, "composition.yml"))
			if code != exitFail || !strings.Contains(stderr, tt.wantErr) || !strings.Contains(stderr, "nothing") {
				t.Errorf("exit %d, stderr %q; want exit 1, %q and that nothing was written", code, stderr, tt.wantErr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != inDir {
				t.Errorf("%d files in the directory, want the %d that were there", len(ents), inDir)
			}
		})
	}
	code, _, stderr := runIn(t, importTwo, "import", "-", "--dir", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "--dir goes with --write") {
		t.Errorf("--dir without --write: exit %d, stderr %q", code, stderr)
	}
}
