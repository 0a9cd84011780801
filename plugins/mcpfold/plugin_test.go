package mcpfold_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestPluginConfigThroughTheHost(t *testing.T) {
	tests := []struct {
		name, config, wantErr string
	}{
		{"defaults", `{}`, ""},
		{"every key", `{prefix: ext__, keep: ["ext__a__*"], servers: [a, b], descriptionLimit: 50}`, ""},
		{"unknown key", `{prefixes: mcp__}`, "prefixes"},
		{"bad prefix", `{prefix: "mcp::"}`, "prefix:"},
		{"zero limit", `{descriptionLimit: 0}`, "descriptionLimit:"},
		{"wrong type", `{keep: 3}`, "keep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "plugins:\n  - id: fold\n    name: mcp-fold\n    config: " + tt.config + "\n"
			c, err := host.ParseComposition("c.yml", []byte(doc), nil)
			if err == nil {
				err = host.Check(c)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("config %s: %v", tt.config, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "fold") {
				t.Fatalf("config %s: error %v, want one naming the entry and %q", tt.config, err, tt.wantErr)
			}
		})
	}
}

func TestPluginInAHost(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	dir := t.TempDir()
	doc := `plugins:
  - id: attachments
    name: attachments
    config: {dir: ` + filepath.Join(dir, "att") + `}
  - id: settings
    name: settings
    config: {file: ` + filepath.Join(dir, "settings.yaml") + `}
  - id: fold
    name: mcp-fold
    config:
      keep: [mcp__gh__search_*]
`
	c, err := host.ParseComposition("c.yml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(nil)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	reg, ok := host.Lookup(h, tools.Key)
	if !ok {
		t.Fatal("no tools service")
	}
	client := host.NewScope(context.Background(), "client", nil)
	t.Cleanup(func() { _ = client.Dispose(time.Second) })
	for _, tl := range []struct{ server, name string }{{"gh", "mcp__gh__create_issue"}, {"gh", "mcp__gh__search_code"}, {"fs", "mcp__fs__read_file"}} {
		n := tl.name
		_, err := reg.Register(client, tools.Definition{Name: n, Description: n, InputSchema: json.RawMessage(`{"type":"object"}`), Origin: tools.Origin{Server: tl.server},
			Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "ok"}, nil }})
		if err != nil {
			t.Fatal(err)
		}
	}
	asm, err := reg.Assemble(context.Background(), model)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range asm.Tools {
		names = append(names, s.Name)
	}
	if want := []string{"mcp__gh__search_code", "mcp_call", "mcp_list"}; !slices.Equal(names, want) {
		t.Fatalf("assembled %v, want %v", names, want)
	}
	cmds, ok := host.Lookup(h, commands.Key)
	if !ok {
		t.Fatal("no commands service")
	}
	if r := cmds.Run(context.Background(), model, "/mcp disable 2"); r.Error || !strings.Contains(r.Text, `server "gh" (id 2) disabled`) {
		t.Fatalf("/mcp disable 2: %+v", r)
	}
	for _, st := range h.Status() {
		if st.ID == "fold" && (st.State != host.StateActive || !strings.Contains(st.Detail, "folding")) {
			t.Fatalf("fold status %+v", st)
		}
	}

	// Without the settings service the fold restarts and its toggles refuse.
	c.Entries = slices.DeleteFunc(c.Entries, func(e host.Entry) bool { return e.ID == "settings" })
	c.Entries = append(c.Entries, host.Entry{ID: "settings", Name: "settings", Disabled: true})
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if r := cmds.Run(context.Background(), model, "/mcp disable 2"); !r.Error || !strings.Contains(r.Text, "needs the settings service") {
		t.Fatalf("/mcp disable without settings: %+v", r)
	}
}
