package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/registrytest"
)

// TestAddSearchRemoveCommands: search, add (its answer fed on stdin) and
// remove through the command line, against the fixture registry the
// environment names (DSH_SETTINGS__REGISTRY).
func TestAddSearchRemoveCommands(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Testdata(t))
	t.Setenv("DSH_SETTINGS__REGISTRY", reg.URL)
	home := t.TempDir() // the pins add writes
	t.Setenv("DSH_HOME", home)
	code, out, errs := runIn(t, "", "search", "server")
	if code != exitOK || !strings.Contains(out, "io.github.modelcontextprotocol/server-filesystem@2026.8.31  npm stdio\n    Read and write the files") || !strings.Contains(out, "io.github.modelcontextprotocol/server-everything@") {
		t.Errorf("search: %d\n%s%s", code, out, errs)
	}
	// --limit 0 is refused, not taken as 1.
	if code, out, errs := runIn(t, "", "search", "--limit", "0", "server"); code == exitOK || !strings.Contains(errs, "--limit 0: list at least 1 server") {
		t.Errorf("search --limit 0: %d\n%s%s", code, out, errs)
	}
	file := filepath.Join(t.TempDir(), "composition.yml")
	orig := "# mine\nplugins:\n  - id: fold\n    name: mcp-fold\n"
	if err := os.WriteFile(file, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, out, errs = runIn(t, dir+"\n", "add", "-c", file, "--name", "files", "io.github.modelcontextprotocol/server-filesystem@2026.8.31")
	if code != exitOK || !strings.Contains(out, "added files to "+file) || !strings.Contains(errs, "argument <directory> (A directory the server may read and write): ") {
		t.Fatalf("add: %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(home, "pins", "files.json")); err != nil {
		t.Errorf("files is not held: %v", err)
	}
	b, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(b), orig) || !strings.Contains(string(b), "'@modelcontextprotocol/server-filesystem@2026.8.31', "+dir+"]") {
		t.Errorf("composition:\n%s", b)
	}
	if code, _, errs := runIn(t, "", "add", "-c", file, "files", "--", "echo"); code != exitFail || !strings.Contains(errs, "already there") {
		t.Errorf("a second files: %d %s", code, errs)
	}
	if code, _, errs := runIn(t, "", "add", "-c", file, "io.github.modelcontextprotocol/server-filesystem"); code != exitFail || !strings.Contains(errs, "no answer") {
		t.Errorf("add without an answer: %d %s", code, errs)
	}
	if code, _, _ := runIn(t, "", "add", "-c", file, "justaname"); code != exitUsage {
		t.Errorf("add justaname: %d, want usage", code)
	}
	code, out, errs = runIn(t, "", "remove", "-c", file, "files")
	if b, _ := os.ReadFile(file); code != exitOK || string(b) != orig {
		t.Errorf("remove: %d %s%s\n%s", code, out, errs, b)
	}
}
