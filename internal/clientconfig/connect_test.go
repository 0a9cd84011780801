package clientconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// seeds are realistic configs of each client: unrelated settings (and
// comments where the format has them) that must survive byte for byte,
// and one server of the client's own, "fixture", for --move.
var seeds = map[string]struct {
	rel  string // the user file under HOME
	text string
}{
	"claude-code": {".claude.json", `{
  "numStartups": 12,
  "installMethod": "npm",
  "autoUpdates": true,
  "tipsHistory": {
    "new-user-warmup": 1
  },
  "userID": "3f2a9c",
  "projects": {
    "/home/dev/src/app": {
      "allowedTools": [],
      "mcpServers": {},
      "hasTrustDialogAccepted": true
    }
  },
  "mcpServers": {
    "fixture": {
      "type": "stdio",
      "command": "FIXTURE",
      "args": [],
      "env": {}
    }
  },
  "hasCompletedOnboarding": true
}
`},
	"codex": {".codex/config.toml", `# Codex settings
model = "gpt-5-codex"
approval_policy = "on-request"

[tui]
notifications = true  # desktop notifications

# the fixture server
[mcp_servers.fixture]
command = "FIXTURE"
args = []
env = { MODE = "test" }

[projects."/home/dev/src/app"]
trust_level = "trusted"
`},
	"gemini": {".gemini/settings.json", `{
  // picked in /theme
  "theme": "GitHub",
  "selectedAuthType": "oauth-personal",
  "mcpServers": {
    "fixture": {
      "command": "FIXTURE",
      "args": []
    }
  },
  "usageStatisticsEnabled": false
}
`},
	"opencode": {".config/opencode/opencode.jsonc", `{
  "$schema": "https://opencode.ai/config.json",
  // the model we use
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    "fixture": {
      "type": "local",
      "command": ["FIXTURE"],
      "enabled": true, /* on */
    },
  },
  "theme": "opencode",
}
`},
	"cursor": {".cursor/mcp.json", `{
  "mcpServers": {
    "fixture": {
      "command": "FIXTURE",
      "args": []
    }
  }
}
`},
	"vscode": {".config/Code/User/mcp.json", `{
	// inputs VS Code asks for
	"inputs": [
		{
			"type": "promptString",
			"id": "api-key",
			"description": "API key",
			"password": true
		}
	],
	"servers": {
		"fixture": {
			"type": "stdio",
			"command": "FIXTURE",
			"args": []
		}
	}
}
`},
}

// fixtureCmd is the seeds' server command in the tests that do not run it.
const fixtureCmd = "/usr/local/bin/fixture-mcp"

// setup writes client's seed under a new HOME (with command as the
// fixture's) and returns options that connect it to a new composition.
func setup(t testing.TB, client, command string) (Options, string, []byte) {
	t.Helper()
	home := t.TempDir()
	seed := seeds[client]
	file := filepath.Join(home, seed.rel)
	text := []byte(strings.ReplaceAll(seed.text, "FIXTURE", command))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, text, 0o600); err != nil {
		t.Fatal(err)
	}
	comp := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(comp, []byte("# my servers\nplugins: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Options{
		Client:   client,
		Env:      Env{Home: home, GOOS: "linux"},
		Target:   Target{Executable: "/opt/dsh/bin/dsh-host", Composition: comp},
		StateDir: filepath.Join(t.TempDir(), "connect"),
	}, file, text
}

func connect(t *testing.T, o Options) *Plan {
	t.Helper()
	p, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	return p
}

func undo(t *testing.T, o Options) {
	t.Helper()
	p, err := Undo(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// onlyAdded fails unless the diff only adds lines, but for a line that
// gained a trailing comma.
func onlyAdded(t *testing.T, diff string) {
	t.Helper()
	lines := strings.Split(diff, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "-") || strings.HasPrefix(l, "---") {
			continue
		}
		comma := false
		for _, m := range lines[i+1:] {
			if m == "+"+l[1:]+"," {
				comma = true
			}
		}
		if !comma {
			t.Errorf("the diff changes an unrelated line %q:\n%s", l, diff)
		}
	}
}

// entryOf decodes the entry name of the client's file.
func entryOf(t *testing.T, client string, text []byte, name string) map[string]any {
	t.Helper()
	c, _ := findClient(client)
	var doc any
	if c.format == formatTOML {
		d, err := decodeTOML(text)
		if err != nil {
			t.Fatal(err)
		}
		doc = d
	} else {
		r, err := parseJSON(text, c.format == formatJSONC)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		doc, _ = decodeJSON(text, r)
	}
	e, _ := servers(doc, c.list(doc))[name].(map[string]any)
	return e
}

func TestConnectKeepsEveryOtherByte(t *testing.T) {
	for _, client := range Clients() {
		t.Run(client, func(t *testing.T) {
			o, file, orig := setup(t, client, fixtureCmd)
			p := connect(t, o)
			diff := p.Diff()
			if !strings.Contains(diff, "+++ "+file) || !strings.Contains(diff, "/opt/dsh/bin/dsh-host") {
				t.Errorf("diff:\n%s", diff)
			}
			onlyAdded(t, diff)
			got := read(t, file)
			if !bytes.Equal(got, p.New) {
				t.Fatal("the file is not what the plan showed")
			}
			e := entryOf(t, client, got, DefaultName)
			if comp, ok := isDshHost(e); !ok || comp != o.Target.Composition {
				t.Fatalf("entry %v: not dsh-host serve -c %s\n%s", e, o.Target.Composition, got)
			}
			if entryOf(t, client, got, "fixture") == nil {
				t.Fatalf("the client's own server is gone:\n%s", got)
			}
			// A second connect replaces the entry, not doubles it, and
			// undo still goes back to the file before the first.
			o.Target.Composition = filepath.Join(filepath.Dir(o.Target.Composition), "other.yml")
			p2 := connect(t, o)
			if n := strings.Count(string(p2.New), "other.yml"); n != 1 {
				t.Errorf("other.yml %d times after the second connect:\n%s", n, p2.New)
			}
			if strings.Contains(string(p2.New), "composition.yml") {
				t.Errorf("the first entry is still there:\n%s", p2.New)
			}
			undo(t, o)
			if got := read(t, file); !bytes.Equal(got, orig) {
				t.Fatalf("undo did not restore the original:\n%s\nwant:\n%s", got, orig)
			}
			if info, _ := os.Stat(file); info.Mode().Perm() != 0o600 {
				t.Errorf("mode %v after undo, want 0600", info.Mode().Perm())
			}
			if _, err := Undo(o); err == nil || !strings.Contains(err.Error(), "no backup") {
				t.Errorf("a second undo: %v", err)
			}
		})
	}
}

// TestConnectCreatesAndUndoRemoves: a client without a file gets one, and
// undo removes it again.
func TestConnectCreatesAndUndoRemoves(t *testing.T) {
	for _, client := range Clients() {
		t.Run(client, func(t *testing.T) {
			o, file, _ := setup(t, client, fixtureCmd)
			os.Remove(file)
			p := connect(t, o)
			file = p.File // opencode.json, not the seed's opencode.jsonc
			if !strings.Contains(p.Diff(), "--- /dev/null") {
				t.Errorf("diff:\n%s", p.Diff())
			}
			if _, ok := isDshHost(entryOf(t, client, read(t, file), DefaultName)); !ok {
				t.Fatalf("no entry:\n%s", read(t, file))
			}
			if info, _ := os.Stat(file); info.Mode().Perm() != 0o600 {
				t.Errorf("a new user file is %v, want 0600", info.Mode().Perm())
			}
			undo(t, o)
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Fatalf("undo left %s: %v", file, err)
			}
		})
	}
}

func TestConnectHTTP(t *testing.T) {
	want := map[string]string{
		"claude-code": `"Authorization": "Bearer ${DSH_TOKEN}"`,
		"codex":       `bearer_token_env_var = "DSH_TOKEN"`,
		"gemini":      `"httpUrl": "http://127.0.0.1:8931/mcp"`,
		"opencode":    `"Authorization": "Bearer {env:DSH_TOKEN}"`,
		"cursor":      `"Authorization": "Bearer ${env:DSH_TOKEN}"`,
		"vscode":      `"Authorization": "Bearer ${env:DSH_TOKEN}"`,
	}
	for _, client := range Clients() {
		t.Run(client, func(t *testing.T) {
			o, _, _ := setup(t, client, fixtureCmd)
			o.Target = Target{URL: "http://127.0.0.1:8931/mcp", TokenEnv: "DSH_TOKEN"}
			p := connect(t, o)
			if !strings.Contains(string(p.New), want[client]) {
				t.Errorf("want %s in:\n%s", want[client], p.New)
			}
			list := List(o.Env, "", o.StateDir)
			if got := connected(list, client); got != "dsh → http://127.0.0.1:8931/mcp" {
				t.Errorf("list says %q", got)
			}
		})
	}
}

func connected(list []Connection, client string) string {
	for _, c := range list {
		if c.Client == client {
			return strings.Join(c.Entries, "; ")
		}
	}
	return ""
}

// TestMoveLeavesOnlyDshHost: --move puts the client's servers into the
// composition (its comment kept) and leaves the client with dsh-host
// alone; undo restores both.
func TestMoveLeavesOnlyDshHost(t *testing.T) {
	for _, client := range Clients() {
		t.Run(client, func(t *testing.T) {
			o, file, orig := setup(t, client, fixtureCmd)
			o.Move = true
			compOrig := read(t, o.Target.Composition)
			p := connect(t, o)
			if len(p.Moved) != 1 || p.Moved[0] != "fixture" {
				t.Fatalf("moved %v; notes %v", p.Moved, p.Notes)
			}
			if entryOf(t, client, read(t, file), "fixture") != nil {
				t.Fatalf("fixture is still in the client:\n%s", read(t, file))
			}
			comp := read(t, o.Target.Composition)
			if !bytes.HasPrefix(comp, []byte("# my servers\n")) {
				t.Errorf("the composition lost its comment:\n%s", comp)
			}
			c, err := host.ParseComposition(o.Target.Composition, comp, os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Entries) != 1 || c.Entries[0].ID != "fixture" {
				t.Fatalf("composition entries %+v:\n%s", c.Entries, comp)
			}
			if !strings.Contains(p.Diff(), "+++ "+o.Target.Composition) {
				t.Errorf("the diff does not show the composition:\n%s", p.Diff())
			}
			list := List(o.Env, "", o.StateDir)
			if got := connected(list, client); got != "dsh → "+o.Target.Composition {
				t.Errorf("list says %q", got)
			}
			undo(t, o)
			if !bytes.Equal(read(t, file), orig) || !bytes.Equal(read(t, o.Target.Composition), compOrig) {
				t.Fatalf("undo did not restore both files:\n%s\n%s", read(t, file), read(t, o.Target.Composition))
			}
		})
	}
}

// TestMoveRefusesATakenName: a server whose name the composition already
// uses is not moved, and nothing is written.
func TestMoveRefusesATakenName(t *testing.T) {
	o, file, orig := setup(t, "cursor", fixtureCmd)
	os.WriteFile(o.Target.Composition, []byte("plugins:\n  - id: fixture\n    name: mcp-client\n    config: {serverName: fixture, transport: stdio, command: x}\n"), 0o644)
	o.Move = true
	if _, err := Prepare(o); err == nil || !strings.Contains(err.Error(), `"fixture" is already there`) {
		t.Fatalf("err = %v", err)
	}
	if !bytes.Equal(read(t, file), orig) {
		t.Fatal("the client's file changed")
	}
}

func TestHostileFiles(t *testing.T) {
	tests := []struct {
		name, client, text, want string
	}{
		{"duplicate key", "cursor", "{\n  \"mcpServers\": {},\n  \"mcpServers\": {}\n}\n", `line 3, column 3: key "mcpServers" again (first on line 2)`},
		{"duplicate server", "claude-code", "{\"mcpServers\": {\"a\": {},\n \"a\": {}}}", `line 2, column 2: key "a" again`},
		{"duplicate TOML table", "codex", "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a]\ncommand = \"y\"\n", "line 3"},
		{"not JSON", "cursor", "mcpServers:\n  a: {}\n", "line 1, column 1"},
		{"not TOML", "codex", "{\"mcp_servers\": {}}\n", "line 1"},
		{"a comment in strict JSON", "claude-code", "{\n  // hi\n  \"a\": 1\n}\n", "line 2, column 3: a comment"},
		{"trailing comma in strict JSON", "cursor", "{\"a\": 1,}\n", "trailing comma"},
		{"list not an object", "vscode", "{\"servers\": []}\n", `line 1: "servers" is not a JSON object`},
		{"top not an object", "gemini", "[]\n", "not a JSON object"},
		{"unterminated comment", "vscode", "{ /* x\n", "does not end"},
		{"inline table", "codex", "mcp_servers = { dsh = { command = \"/x/dsh-host\", args = [\"serve\"] } }\n", "inline table"},
		{"dotted keys", "codex", "[mcp_servers]\ndsh.command = \"/x/dsh-host\"\ndsh.args = [\"serve\"]\n", "not written as a [mcp_servers.dsh] table"},
		{"deep nesting", "cursor", strings.Repeat("[", 1000), "nested more than"},
		{"unended table header", "codex", "[mcp_servers.dsh\n", "to end table name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, file, _ := setup(t, tt.client, fixtureCmd)
			os.WriteFile(file, []byte(tt.text), 0o600)
			_, err := Prepare(o)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("err = %v, want %q naming %s", err, tt.want, file)
			}
			if got := read(t, file); string(got) != tt.text {
				t.Fatal("the file changed")
			}
		})
	}
}

// TestSymlinkedConfig: a config that is a symbolic link (a dotfile
// manager's) is edited through it: the link stays, its target changes,
// undo restores the target.
func TestSymlinkedConfig(t *testing.T) {
	o, file, orig := setup(t, "claude-code", fixtureCmd)
	target := filepath.Join(t.TempDir(), "dotfiles", "claude.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	os.Rename(file, target)
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
	p := connect(t, o)
	if !strings.Contains(p.Diff(), file+" -> "+target) {
		t.Errorf("the diff does not name the link and its target:\n%s", p.Diff())
	}
	if info, err := os.Lstat(file); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is gone: %v", err)
	}
	if _, ok := isDshHost(entryOf(t, "claude-code", read(t, target), DefaultName)); !ok {
		t.Fatal("the target has no entry")
	}
	undo(t, o)
	if !bytes.Equal(read(t, target), orig) {
		t.Fatal("undo did not restore the target")
	}
	// A link to nowhere is refused.
	os.Remove(target)
	if _, err := Prepare(o); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("dangling link: %v", err)
	}
}

// TestChangedMeanwhile: a client that writes its file between the diff and
// the write (Claude Code rewrites ~/.claude.json often) is not overwritten.
func TestChangedMeanwhile(t *testing.T) {
	o, file, _ := setup(t, "claude-code", fixtureCmd)
	p, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(seeds["claude-code"].text, "12", "13", 1)
	os.WriteFile(file, []byte(changed), 0o600)
	if err := p.Apply(); err == nil || !strings.Contains(err.Error(), "changed while connect ran") {
		t.Fatalf("err = %v", err)
	}
	if string(read(t, file)) != changed {
		t.Fatal("the client's write was lost")
	}
}

func TestExistingDshHostEntryReplaced(t *testing.T) {
	o, file, _ := setup(t, "vscode", fixtureCmd)
	text := "{\n\t\"servers\": {\n\t\t\"dsh\": {\"type\": \"stdio\", \"command\": \"/old/dsh-host\", \"args\": [\"serve\", \"--stdio\"]}, // old\n\t\t\"other\": {\"command\": \"x\"}\n\t}\n}\n"
	os.WriteFile(file, []byte(text), 0o600)
	p := connect(t, o)
	got := string(read(t, file))
	if strings.Contains(got, "/old/dsh-host") || strings.Count(got, `"dsh"`) != 1 || !strings.Contains(got, "}, // old") {
		t.Fatalf("got:\n%s\ndiff:\n%s", got, p.Diff())
	}
}

func TestCheckExecutable(t *testing.T) {
	err := CheckExecutable("/tmp/go-build123456/b001/exe/dsh-host")
	if err == nil || !strings.Contains(err.Error(), "go install ./cmd/dsh-host") {
		t.Fatalf("err = %v", err)
	}
	if err := CheckExecutable("/home/dev/go/bin/dsh-host"); err != nil {
		t.Fatal(err)
	}
}

// TestNameLimit: a long entry name shrinks the gateway's names so that
// the client's prefix and the name fit its cap.
func TestNameLimit(t *testing.T) {
	o, _, _ := setup(t, "claude-code", fixtureCmd)
	o.Name = "my-very-long-dsh-host-entry"
	p := connect(t, o)
	// 64 - len("mcp____") - 27 = 30
	if !strings.Contains(string(p.New), `"--name-limit", "30"`) {
		t.Fatalf("got:\n%s", p.New)
	}
	o2, _, _ := setup(t, "claude-code", fixtureCmd)
	if p := connect(t, o2); strings.Contains(string(p.New), "--name-limit") {
		t.Fatalf("a short name needs no limit:\n%s", p.New)
	}
}

// TestMoveRefusesAServerNotInATable: a Codex server to move that is not
// its own table is refused by name before anything is written.
func TestMoveRefusesAServerNotInATable(t *testing.T) {
	o, file, _ := setup(t, "codex", fixtureCmd)
	text := "model = \"o3\"\n\n[mcp_servers]\nfixture = { command = \"/bin/fx\" }\n"
	os.WriteFile(file, []byte(text), 0o600)
	o.Move = true
	if _, err := Prepare(o); err == nil || !strings.Contains(err.Error(), "mcp_servers.fixture is not written as a [mcp_servers.fixture] table") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadEntryName(t *testing.T) {
	o, _, _ := setup(t, "codex", fixtureCmd)
	for _, name := range []string{"a b", "x]\n[evil", strings.Repeat("n", 33), "dsh\"host"} {
		o.Name = name
		if _, err := Prepare(o); err == nil || !strings.Contains(err.Error(), "entry name") {
			t.Errorf("name %q: %v", name, err)
		}
	}
}

func writeText(t *testing.T, file, text string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestProjectFile: --project writes the project's file (.mcp.json for
// Claude Code), readable by the team's tools.
func TestProjectFile(t *testing.T) {
	o, _, _ := setup(t, "claude-code", fixtureCmd)
	o.Project = t.TempDir()
	p := connect(t, o)
	if p.File != filepath.Join(o.Project, ".mcp.json") {
		t.Fatalf("wrote %s", p.File)
	}
	if info, _ := os.Stat(p.File); info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", info.Mode().Perm())
	}
	undo(t, o)
	if _, err := os.Stat(p.File); !os.IsNotExist(err) {
		t.Fatal("undo left the project file")
	}
}

// TestNotSomeoneElsesEntry: a server of the user's that happens to be
// called dsh is not replaced.
func TestNotSomeoneElsesEntry(t *testing.T) {
	o, file, _ := setup(t, "gemini", fixtureCmd)
	text := "{\"mcpServers\": {\"dsh\": {\"command\": \"/usr/bin/dsh-shell-mcp\"}}}\n"
	writeText(t, file, text)
	if _, err := Prepare(o); err == nil || !strings.Contains(err.Error(), "not dsh-host's") {
		t.Fatalf("err = %v", err)
	}
	o.Name = "dsh-host"
	connect(t, o)
	// An HTTP entry connect wrote is connect's to replace.
	o.Target = Target{URL: "http://127.0.0.1:1/mcp"}
	connect(t, o)
	o.Target.URL = "http://127.0.0.1:2/mcp"
	if p := connect(t, o); !strings.Contains(string(p.New), "127.0.0.1:2") || !strings.Contains(string(p.New), "dsh-shell-mcp") {
		t.Fatalf("got:\n%s", p.New)
	}
}

// TestRelativeCommandNoted: a composition server started by a relative
// path is named in the plan's notes, as the client starts dsh-host in a
// directory of its own.
func TestRelativeCommandNoted(t *testing.T) {
	o, _, _ := setup(t, "cursor", fixtureCmd)
	writeText(t, o.Target.Composition, "plugins:\n  - id: demo\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: demo\n      command: go\n      args: [run, ./testdata/mcpfixture]\n  - id: ok\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: ok\n      command: go\n      args: [run, ./x]\n      cwd: /src/repo\n")
	p, err := Prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(p.Notes, "\n")
	if !strings.Contains(notes, `composition.yml:2: entry demo runs "./testdata/mcpfixture"`) || strings.Contains(notes, "entry ok") {
		t.Fatalf("notes:\n%s", notes)
	}
}

// TestUndoOfACreatedFileRemovedSince: a file connect created and the user
// removed since is not brought back empty by undo (an empty file is not
// JSON to the client); the backup goes.
func TestUndoOfACreatedFileRemovedSince(t *testing.T) {
	o, file, _ := setup(t, "cursor", fixtureCmd)
	os.Remove(file)
	connect(t, o)
	os.Remove(file)
	p, err := Undo(o)
	if err != nil {
		t.Fatal(err)
	}
	// A front end applies only a plan that changes something: this
	// one drops the backup.
	if !p.Changed() || !strings.Contains(p.Summary(), "gone already") {
		t.Errorf("changed %v, summary %q", p.Changed(), p.Summary())
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(file); !os.IsNotExist(err) {
		t.Fatalf("undo left %s: %v", file, err)
	}
	if _, err := Undo(o); err == nil || !strings.Contains(err.Error(), "no backup") {
		t.Errorf("a second undo: %v", err)
	}
}

// TestProjectLinkOutsideRefused: a project's file (a cloned repository's)
// that is a symbolic link out of the project, or lies in a directory that
// links out of it, is refused: connect --project would edit a file of the
// user's elsewhere (~/.docker/config.json) and show its lines in the diff.
func TestProjectLinkOutsideRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "config.json")
	secret := "{\n  \"auths\": {\"registry.example\": {\"auth\": \"c2VjcmV0\"}}\n}\n"
	writeText(t, outside, secret)
	for _, tc := range []struct{ client, link, to string }{
		{"claude-code", ".mcp.json", outside},
		{"vscode", ".vscode", filepath.Dir(outside)},
	} {
		o, _, _ := setup(t, tc.client, fixtureCmd)
		o.Project = t.TempDir()
		if err := os.Symlink(tc.to, filepath.Join(o.Project, tc.link)); err != nil {
			t.Fatal(err)
		}
		_, err := Prepare(o)
		if err == nil || !strings.Contains(err.Error(), "outside the project") {
			t.Errorf("%s: %v, want a refusal", tc.client, err)
		}
		if string(read(t, outside)) != secret {
			t.Fatalf("%s: the file outside changed", tc.client)
		}
	}
	// A link inside the project is followed as ever.
	o, _, _ := setup(t, "claude-code", fixtureCmd)
	o.Project = t.TempDir()
	writeText(t, filepath.Join(o.Project, "shared.json"), "{}\n")
	if err := os.Symlink("shared.json", filepath.Join(o.Project, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	connect(t, o)
}

// TestBadTarget: a gateway URL a client cannot reach (no scheme, another
// scheme, no host, credentials in it) or a token variable no shell can
// set is refused before anything is planned, naming the flag.
func TestBadTarget(t *testing.T) {
	for _, tc := range []struct {
		target Target
		want   string
	}{
		{Target{URL: "127.0.0.1:8931/mcp"}, "--http"},
		{Target{URL: "ftp://127.0.0.1/mcp"}, "--http"},
		{Target{URL: "http:///mcp"}, "--http"},
		{Target{URL: "https://user:pw@gw.example/mcp"}, "--http"},
		{Target{URL: "http://127.0.0.1:8931/mcp", TokenEnv: "DSH TOKEN"}, "--token-env"},
		{Target{URL: "http://127.0.0.1:8931/mcp", TokenEnv: "X}${HOME"}, "--token-env"},
		{Target{URL: "http://127.0.0.1:8931/mcp", TokenEnv: "1X"}, "--token-env"},
	} {
		o, file, orig := setup(t, "claude-code", fixtureCmd)
		o.Target = tc.target
		if _, err := Prepare(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.target, err, tc.want)
		}
		if !bytes.Equal(read(t, file), orig) {
			t.Fatal("the file changed")
		}
	}
}

// TestReconnectHTTPUnderAnEarlierName: HTTP entries connect wrote under
// two names are both its own: List shows both, and connecting --http again
// under the first name replaces its entry, though the record's last name
// is the second (it was refused as not dsh-host's).
func TestReconnectHTTPUnderAnEarlierName(t *testing.T) {
	o, _, _ := setup(t, "gemini", fixtureCmd)
	o.Target = Target{URL: "http://127.0.0.1:1/mcp"}
	o.Name = "first"
	connect(t, o)
	o.Name = "second"
	connect(t, o)
	if got := connected(List(o.Env, "", o.StateDir), "gemini"); got != "first → http://127.0.0.1:1/mcp; second → http://127.0.0.1:1/mcp" {
		t.Errorf("list says %q", got)
	}
	o.Name = "first"
	o.Target.URL = "http://127.0.0.1:2/mcp"
	p, err := Prepare(o)
	if err != nil {
		t.Fatalf("reconnect under the earlier name: %v", err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	if got := connected(List(o.Env, "", o.StateDir), "gemini"); got != "first → http://127.0.0.1:2/mcp; second → http://127.0.0.1:1/mcp" {
		t.Errorf("after the reconnect list says %q", got)
	}
}
