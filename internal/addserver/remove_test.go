package addserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/addserver"
)

// The entries around the one each case breaks, kept byte for byte.
const (
	removeHead = "# my servers\nplugins:\n" +
		"  - id: keep\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: keep\n      command: a\n"
	removeTail = "  # fold, after\n  - id: fold\n    name: mcp-fold\n"
)

// TestRemoveABrokenEntry: an entry the host refuses (an unknown config
// key, a value of the wrong type, an unknown or malformed entry key, one
// in an included file) is removed by its id or its serverName, read from
// the file's text, and every other byte stays. Removing a broken entry
// is when a person needs remove most.
func TestRemoveABrokenEntry(t *testing.T) {
	for _, tt := range []struct {
		name, entry, remove string
	}{
		{"unknown config key, by serverName", "  - id: gh\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: github\n      comand: npx\n", "github"},
		{"unknown config key, by id", "  - id: gh\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: github\n      comand: npx\n", "gh"},
		{"wrong type, by serverName", "  - id: gh\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: github\n      command: npx\n      args: -y server-github\n", "github"},
		{"config not a map, by id", "  - id: gh\n    name: mcp-client\n    config: npx -y server-github\n", "gh"},
		{"unknown entry key, by id", "  - id: gh\n    name: mcp-client\n    comand: npx\n    config:\n      transport: stdio\n      serverName: github\n", "gh"},
		{"unknown entry key, by serverName", "  - id: gh\n    name: mcp-client\n    comand: npx\n    config:\n      transport: stdio\n      serverName: github\n", "github"},
		{"disabled not a boolean, by id", "  - id: gh\n    name: mcp-client\n    disabled: maybe\n    config:\n      transport: stdio\n      serverName: github\n      command: npx\n", "gh"},
		{"a key twice, by serverName", "  - id: gh\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: github\n      command: npx\n      command: uvx\n", "github"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "composition.yml")
			if err := os.WriteFile(file, []byte(removeHead+tt.entry+removeTail), 0o644); err != nil {
				t.Fatal(err)
			}
			text, err := addserver.RemoveText(t.Context(), file, tt.remove)
			if err != nil || !strings.Contains(text, "removed "+tt.remove+" from "+file) {
				t.Fatalf("remove %s: %q, %v", tt.remove, text, err)
			}
			if got, _ := os.ReadFile(file); string(got) != removeHead+removeTail {
				t.Errorf("after remove:\n%s\nwant:\n%s", got, removeHead+removeTail)
			}
		})
	}
}

// TestRemoveABrokenEntryIncluded: a broken entry, the only one of an
// included file, is found there and taken out of it.
func TestRemoveABrokenEntryIncluded(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "composition.yml")
	main := removeHead + removeTail + "include: [composition.d/*.yml]\n"
	if err := os.WriteFile(file, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "composition.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	inc := filepath.Join(dir, "composition.d", "gh.yml")
	if err := os.WriteFile(inc, []byte("plugins:\n  - id: gh\n    name: mcp-client\n    config:\n      serverName: github\n      transport: [stdio]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, err := addserver.RemoveText(t.Context(), file, "github")
	if err != nil || !strings.Contains(text, "removed github from "+inc) {
		t.Fatalf("remove github: %q, %v", text, err)
	}
	if got, _ := os.ReadFile(inc); string(got) != "plugins: []\n" {
		t.Errorf("the included file after remove:\n%s", got)
	}
	if got, _ := os.ReadFile(file); string(got) != main {
		t.Errorf("the main file changed:\n%s", got)
	}
}

// TestRemoveRefusesToGuess: a name two entries answer to (two with the
// same serverName, or an id given twice, which the host refuses) is
// refused naming both places, and nothing is changed; so is a name only
// an entry of another plugin has, broken or not.
func TestRemoveRefusesToGuess(t *testing.T) {
	for _, tt := range []struct {
		name, entries, remove, want string
	}{
		{"a serverName twice", "  - id: a\n    name: mcp-client\n    config:\n      serverName: dup\n      bogus: 1\n" +
			"  - id: b\n    name: mcp-client\n    config:\n      transport: stdio\n      serverName: dup\n      command: b\n", "dup", "composition.yml:9 and "},
		{"an id twice", "  - id: a\n    name: mcp-client\n    config:\n      serverName: x\n" +
			"  - id: a\n    name: mcp-client\n    config:\n      serverName: y\n", "a", "composition.yml:9 and "},
		{"another plugin's broken entry", "  - id: f\n    name: mcp-fold\n    config:\n      keep: 3\n", "f", `no MCP server "f"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "composition.yml")
			orig := removeHead + tt.entries + removeTail
			if err := os.WriteFile(file, []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := addserver.RemoveText(t.Context(), file, tt.remove); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("remove %s: %v; want an error saying %q", tt.remove, err, tt.want)
			}
			if got, _ := os.ReadFile(file); string(got) != orig {
				t.Errorf("the file changed:\n%s", got)
			}
		})
	}
}

// TestRemoveNamesWhatItCouldNotRead: a name found nowhere, while an
// included file does not parse as YAML, is an error naming that file too:
// the entry may be there.
func TestRemoveNamesWhatItCouldNotRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "composition.yml")
	main := removeHead + removeTail + "include: [broken.yml]\n"
	if err := os.WriteFile(file, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.yml")
	if err := os.WriteFile(broken, []byte("plugins:\n  - id: gh\n   name: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := addserver.RemoveText(t.Context(), file, "gh")
	if err == nil || !strings.Contains(err.Error(), `no MCP server "gh" (its servers: keep); `+broken+" did not parse") {
		t.Errorf("remove gh: %v; want it to name %s as not parsed", err, broken)
	}
	if got, _ := os.ReadFile(file); string(got) != main {
		t.Errorf("the main file changed:\n%s", got)
	}
}

// TestRemoveFromAOneLineList: entries written on one line (a YAML flow
// list) are told apart by their own text, not by the line the host
// located each at: the host's entries of that line all looked like its
// last one, so remove said the composition had no such MCP server (and
// listed none). Now the entry is found, and the edit refused for what it
// is: remove edits block lists only; the file is left as it was.
func TestRemoveFromAOneLineList(t *testing.T) {
	const orig = "plugins: [{id: a, name: mcp-client, config: {transport: stdio, serverName: sa, command: a}}, " +
		"{id: b, name: mcp-client, config: {transport: stdio, serverName: sb, command: b}}, {id: fold, name: mcp-fold}]\n"
	for _, name := range []string{"a", "sa", "b"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "composition.yml")
			if err := os.WriteFile(file, []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := addserver.RemoveText(t.Context(), file, name); err == nil || !strings.Contains(err.Error(), "flow list") {
				t.Errorf("remove %s: %v; want the flow list refused", name, err)
			}
			if got, _ := os.ReadFile(file); string(got) != orig {
				t.Errorf("the file changed:\n%s", got)
			}
		})
	}
}
