package toolset

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestToolFilter(t *testing.T) {
	s := New(Options{Include: []string{"search_*", "get"}, Exclude: []string{"*_admin"}})
	for raw, want := range map[string]bool{
		"search_code": true, "search_admin": false, "get": true, "getx": false, "other": false,
	} {
		if got := s.keep(raw); got != want {
			t.Errorf("keep(%q) = %v, want %v", raw, got, want)
		}
	}
	if !New(Options{}).keep("anything") {
		t.Error("an empty filter must keep every tool")
	}
}

// newSet returns a Set on reg; *made counts the tool definitions it
// made.
func newSet(t *testing.T, reg *tools.Registry, catalog string, logs *mcptest.Logs, made ...*int) *Set {
	scope := host.NewScope(context.Background(), "srv", slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = scope.Dispose(10 * time.Second) })
	return New(Options{Server: "srv", Label: "mcp-client(srv)", Log: slog.New(logs), Registry: reg, Scope: scope,
		Execute: func(*Tool) func(context.Context, tools.Call) (tools.Output, error) {
			for _, n := range made {
				*n++
			}
			return func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil }
		},
		Render:      func(string) func(any) []tools.Content { return nil },
		CatalogPath: catalog})
}

func tool(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}
}

// An unchanged list keeps its registrations; a conflict rolls the whole
// generation back; a tool only an app may call is left out, logged once.
func TestSwap(t *testing.T) {
	reg := tools.New(nil)
	logs := &mcptest.Logs{}
	var made int
	s := newSet(t, reg, "", logs, &made)
	appOnly := tool("widget")
	appOnly.Meta = mcp.Meta{"ui": map[string]any{"visibility": []any{"app"}}}
	list := []*mcp.Tool{tool("a"), tool("b"), appOnly}
	if err := s.Swap(list); err != nil || s.Len() != 2 {
		t.Fatalf("Swap: %v, %d tools", err, s.Len())
	}
	def, _ := reg.Get(PublicName("srv", "a"))
	if def.Origin.Server != "srv" || def.Origin.RawName != "a" {
		t.Errorf("origin = %+v", def.Origin)
	}
	if err := s.Swap(list); err != nil || made != 2 {
		t.Errorf("an unchanged list made %d definitions, want the first 2 (%v)", made, err)
	}
	if n := len(logs.Find(slog.LevelInfo, "tool not offered to models")); n != 1 {
		t.Errorf("the app-only tool was logged %d times, want once", n)
	}
	// A foreign tool squats on c's name: no tool of this server is left.
	squatter := host.NewScope(context.Background(), "other", slog.New(slog.DiscardHandler))
	defer squatter.Dispose(10 * time.Second)
	if _, err := reg.Register(squatter, tools.Definition{Name: PublicName("srv", "c"), InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Swap([]*mcp.Tool{tool("a"), tool("c")}); err == nil || s.Len() != 0 {
		t.Errorf("a conflict left %d tools (%v)", s.Len(), err)
	}
	if _, ok := reg.Get(PublicName("srv", "a")); ok {
		t.Error("a tool of the rolled-back generation is still registered")
	}
}

// What a live list writes to the cache, the next Set registers from it
// with the instructions; Listed follows the live list; a corrupt file is
// ignored with a warning.
func TestCatalogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cat", "k.json")
	live := newSet(t, tools.New(nil), path, &mcptest.Logs{})
	if !live.Listed("anything") {
		t.Error("before a list, every tool is taken on trust")
	}
	if err := live.SwapLive([]*mcp.Tool{tool("a"), tool("b")}, "use a first"); err != nil {
		t.Fatal(err)
	}
	if !live.Listed("a") || live.Listed("gone") {
		t.Error("Listed does not follow the live list")
	}
	reg := tools.New(nil)
	cached := newSet(t, reg, path, &mcptest.Logs{})
	instructions, ok := cached.FromCatalog()
	if !ok || instructions != "use a first" || cached.Len() != 2 {
		t.Fatalf("FromCatalog = %q, %v, %d tools", instructions, ok, cached.Len())
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &mcptest.Logs{}
	if _, ok := newSet(t, tools.New(nil), path, logs).FromCatalog(); ok || !logs.Has(slog.LevelWarn, "catalog cache ignored") {
		t.Errorf("a corrupt cache was used (%v) or not reported:\n%s", ok, logs.Dump())
	}
}
