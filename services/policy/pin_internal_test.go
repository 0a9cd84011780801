package policy

import (
	"context"
	"log/slog"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

func registerListed(t *testing.T, reg *tools.Registry, s *host.Scope, raw, listing string, list uint64) *tools.Definition {
	t.Helper()
	def := tools.Definition{
		Name:    "mcp__s__" + raw,
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil },
		Origin:  tools.Origin{Server: "s", RawName: raw, Listing: list}, MCPTool: []byte(listing),
	}
	unregister, err := reg.Register(s, def)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)
	return &def
}

// TestPinFirstList: a server without pins trusts its first list as a
// whole, a tool of that list registered late included, and writes its
// pins once; checking again writes nothing; a key order or whitespace the
// server changes is no change; a tool of a later list is held.
func TestPinFirstList(t *testing.T) {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "s", nil)
	defer s.Dispose(0)
	p := newPins(t.TempDir(), reg, func() *slog.Logger { return slog.New(slog.DiscardHandler) })

	a := registerListed(t, reg, s, "a", `{"name":"a","description":"A.","inputSchema":{"type":"object","properties":{}}}`, 7)
	b := registerListed(t, reg, s, "b", `{"name":"b","description":"B."}`, 7)
	if p.held(a) != nil {
		t.Fatal("a tool of the first list is held")
	}
	gen := p.store.gen.Load()
	late := registerListed(t, reg, s, "late", `{"name":"late","description":"Late."}`, 7)
	for _, d := range []*tools.Definition{a, b, a, b} {
		if p.held(d) != nil {
			t.Fatalf("%s of the first list is held", d.Name)
		}
	}
	if got := p.store.gen.Load(); got != gen {
		t.Errorf("checking trusted tools again wrote the pins (%d writes)", got-gen)
	}
	if p.held(late) != nil {
		t.Error("a late tool of the first list is held")
	}
	if p.store.gen.Load() != gen+1 {
		t.Error("the late tool was not pinned with one write")
	}

	// The same definition re-encoded (keys reordered, spaces) is no change.
	same := tools.Definition{Name: "mcp__s__a", Origin: tools.Origin{Server: "s", RawName: "a", Listing: 8},
		MCPTool: []byte(`{ "inputSchema": {"properties": {}, "type": "object"}, "description": "A.", "name": "a" }`)}
	if h := p.held(&same); h != nil {
		t.Errorf("a re-encoded definition is held: %v", h)
	}
	added := tools.Definition{Name: "mcp__s__c", Origin: tools.Origin{Server: "s", RawName: "c", Listing: 8}, MCPTool: []byte(`{"name":"c"}`)}
	if h := p.held(&added); h == nil || !h.New {
		t.Errorf("a tool of a later list: %v, want held as new", h)
	}
}

// TestPinTrustFromAnotherProcess: a tool held by one host is released
// when another process (a `dsh-host trust` with a host of its own) trusts
// it in the shared pins directory.
func TestPinTrustFromAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	discard := func() *slog.Logger { return slog.New(slog.DiscardHandler) }
	s := host.NewScope(context.Background(), "s", nil)
	defer s.Dispose(0)
	reg1, reg2 := tools.New(nil), tools.New(nil)
	p1, p2 := newPins(dir, reg1, discard), newPins(dir, reg2, discard)
	if h := p1.held(registerListed(t, reg1, s, "a", `{"name":"a","description":"A."}`, 1)); h != nil {
		t.Fatalf("first use: %v", h)
	}
	changed := tools.Definition{Name: "mcp__s__a", Origin: tools.Origin{Server: "s", RawName: "a", Listing: 2}, MCPTool: []byte(`{"name":"a","description":"A, changed."}`)}
	if p1.held(&changed) == nil {
		t.Fatal("the changed tool is not held")
	}
	registerListed(t, reg2, s, "a", string(changed.MCPTool), 3)
	if released, err := p2.Trust("s", "a"); err != nil || len(released) != 1 {
		t.Fatalf("the other process's trust: %v, %v", released, err)
	}
	if h := p1.held(&changed); h != nil {
		t.Errorf("still held after the other process trusted it: %v", h)
	}
}
