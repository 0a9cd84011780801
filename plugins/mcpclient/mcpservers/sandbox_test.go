package mcpservers

import (
	"slices"
	"strings"
	"testing"
)

// TestKnownServersGetTheirGrants: import grants server-filesystem (run
// as npx PKG or npx --package PKG CMD) its directories to write, an HTTPS
// API server port 443, and says so in the entry's notes; a relative directory is named, not granted; an entry
// with a sandbox of its own, or an unknown package, is left alone.
func TestKnownServersGetTheirGrants(t *testing.T) {
	convert := func(entry map[string]any) Imported {
		t.Helper()
		imp, err := Convert("s", entry, func(string) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		return imp
	}
	fs := convert(map[string]any{"command": "npx", "args": []any{"-y", "@modelcontextprotocol/server-filesystem@latest", "/home/me/notes", "${HOME}/site", "rel"}})
	if got := fs.Config.Sandbox.Write; !slices.Equal(got, []string{"/home/me/notes", "${HOME}/site"}) {
		t.Errorf("server-filesystem write = %q", got)
	}
	notes := strings.Join(fs.Notes, "\n")
	if !strings.Contains(notes, "sandbox.write") || !strings.Contains(notes, `"rel" is a relative directory`) {
		t.Errorf("notes = %q", notes)
	}
	node := convert(map[string]any{"command": "/usr/bin/node", "args": []any{"/p/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/srv/docs"}})
	if got := node.Config.Sandbox.Write; !slices.Equal(got, []string{"/srv/docs"}) {
		t.Errorf("node server-filesystem write = %q", got)
	}
	// The --package forms, read as Prepare reads them: the package
	// granted is the one named, and the command is not a directory.
	for _, args := range [][]any{
		{"-y", "--package=@modelcontextprotocol/server-filesystem@1.0.0", "mcp-server-filesystem", "/srv/a"},
		{"-p", "@modelcontextprotocol/server-filesystem", "mcp-server-filesystem", "/srv/a"},
	} {
		p := convert(map[string]any{"command": "npx", "args": args})
		if got := p.Config.Sandbox.Write; !slices.Equal(got, []string{"/srv/a"}) {
			t.Errorf("npx %q: write = %q, want [/srv/a]", args, got)
		}
		if notes := strings.Join(p.Notes, "\n"); strings.Contains(notes, "relative directory") {
			t.Errorf("npx %q: notes = %q, the command taken for a directory", args, notes)
		}
	}
	gh := convert(map[string]any{"command": "npx", "args": []any{"-y", "@modelcontextprotocol/server-github"}})
	if c := gh.Config.Sandbox.Connect; c.Any || !slices.Equal(c.List, []uint16{443}) || len(gh.Config.Sandbox.Write) > 0 {
		t.Errorf("server-github sandbox = %+v", gh.Config.Sandbox)
	}
	unknown := convert(map[string]any{"command": "npx", "args": []any{"-y", "some-server", "/x"}})
	if unknown.Config.Sandbox.Set() {
		t.Errorf("an unknown server got grants: %+v", unknown.Config.Sandbox)
	}
	mem := convert(map[string]any{"command": "npx", "args": []any{"-y", "@modelcontextprotocol/server-memory"}})
	if !strings.Contains(strings.Join(mem.Notes, "\n"), "MEMORY_FILE_PATH") {
		t.Errorf("server-memory notes = %q, want MEMORY_FILE_PATH named", mem.Notes)
	}
}
