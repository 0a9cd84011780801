package mcpclient_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// A relative cwd is the entry file's directory, not the host's: an agent
// CLI starts `serve --stdio -c /abs/composition.yml` in a directory of its
// own, and a server named ./bin/fixture beside the composition must still
// start (the default composition's go run ./testdata/mcpfixture is one).
func TestRelativeCwdIsTheEntryFilesDirectory(t *testing.T) {
	hs := newHarness(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile(mcptest.FixtureBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "bin", "fixture")
	if err := os.WriteFile(exe, fixture, 0o755); err != nil {
		t.Fatal(err)
	}
	hs.exes = append(hs.exes, exe)
	// The test runs in the package's directory, not dir.
	hs.apply(host.Entry{ID: "near", Name: "mcp-client", File: filepath.Join(dir, "composition.yml"), Config: map[string]any{
		"serverName": "near", "transport": "stdio", "command": "./bin/fixture", "cwd": ".",
	}})
	hs.requireActive("near")
	eventually(t, "near's tools", func() bool { return len(hs.serverTools("near")) > 0 })
	if got := text(hs.call(tools.Caller{Kind: tools.CallerCall}, "mcp__near__add", map[string]int{"a": 1, "b": 2})); got != "3" {
		t.Errorf("mcp__near__add = %q, want 3", got)
	}
}
