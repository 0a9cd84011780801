package main

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// TestImportAvoidsBuiltinIDs: a server named like a built-in service gets
// another id, since an entry with the built-in's id would replace the
// service (and Check would not say so).
func TestImportAvoidsBuiltinIDs(t *testing.T) {
	const in = `{"mcpServers": {"tools": {"command": "npx"}, "settings": {"url": "https://example.com/mcp"}, "github": {"command": "gh"}}}`
	code, stdout, stderr := runIn(t, in, "import", "-")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	c := checkComposition(t, "composition.yml", stdout)
	var ids []string
	for _, e := range c.Entries {
		ids = append(ids, e.ID)
	}
	if got, want := strings.Join(ids, " "), "tools_2 settings_2 github"; got != want {
		t.Errorf("ids = %s, want %s", got, want)
	}
	for _, p := range host.Plugins() {
		if p.Builtin && strings.Contains(stdout, "id: "+p.Name+"\n") {
			t.Errorf("an entry takes the id of the built-in %s:\n%s", p.Name, stdout)
		}
	}
	if !strings.Contains(stderr, `"tools" is renamed "tools_2": the id "tools" is in use`) {
		t.Errorf("no note of the rename:\n%s", stderr)
	}
}
