package app_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
)

// TestToolDetail: one tool with the schema a try-it form is made from and
// the server's listing; an unknown name is an error.
func TestToolDetail(t *testing.T) {
	both(t, fixtureComposition(t, nil), func(t *testing.T, e *env) {
		d, err := e.ToolDetail(t.Context(), app.ToolRequest{Name: "mcp__fx__add", Caller: "ui"})
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(d.InputSchema, &schema); err != nil || schema.Properties["a"] == nil || schema.Properties["b"] == nil {
			t.Errorf("input schema %s (%v): want a and b", d.InputSchema, err)
		}
		if d.Server != "fx" || d.RawName != "add" || len(d.OutputSchema) == 0 || !strings.Contains(string(d.Listing), `"name":"add"`) {
			t.Errorf("detail %+v output %s listing %s: want fx's add with its output schema and listing", d.Tool, d.OutputSchema, d.Listing)
		}
		if _, err := e.ToolDetail(t.Context(), app.ToolRequest{Name: "mcp__fx__nope"}); err == nil || !strings.Contains(err.Error(), "mcp__fx__nope") {
			t.Errorf("unknown tool: %v; want an error naming it", err)
		}
		if _, err := e.ToolDetail(t.Context(), app.ToolRequest{Name: "mcp__fx__add", Caller: "gateway"}); err == nil {
			t.Error("a front end shown tools as the gateway's caller: no error")
		}
	})
}

// TestComposition: the file as it reads, and a load that failed with the
// file and line of its error, the previous instances running on.
func TestComposition(t *testing.T) {
	composition := fixtureComposition(t, nil)
	both(t, composition, func(t *testing.T, e *env) {
		ci, err := e.Composition(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ci.Text != composition || ci.Failed != 0 || ci.LastError != "" || ci.File != e.File {
			t.Errorf("first load: %+v", ci)
		}
		if b := host.Find(ci.Instances, "broken"); b.State != host.StateFailed || !strings.Contains(strings.Join(b.Stderr, "\n"), "crashing on start") {
			t.Errorf("broken is %s, its stderr %q; want failed, with the line it wrote before it exited", b.State, b.Stderr)
		}
		bad := composition + "  - id: fx\n    name: mcp-client\n"
		if err := os.WriteFile(e.File, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if res, err := e.Reload(t.Context()); err != nil || res.Error == "" {
			t.Fatalf("reload of a duplicate id: %+v, %v; want its error", res, err)
		}
		ci, err = e.Composition(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ci.Text != bad || ci.Failed == 0 || !strings.Contains(ci.LastError, "composition.yml:") {
			t.Errorf("after a failed load: failed %d, error %q; want a failure with file:line", ci.Failed, ci.LastError)
		}
	})
}
