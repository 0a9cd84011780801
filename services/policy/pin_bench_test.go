package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// pinnedServer registers n tools of MCP server s, as mcp-client would
// (each with its listing), and returns the registry.
func pinnedServer(b *testing.B, n int) *tools.Registry {
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "s", nil)
	b.Cleanup(func() { _ = s.Dispose(0) })
	for i := range n {
		raw := fmt.Sprintf("tool_%03d", i)
		listing := fmt.Sprintf(`{"name":%q,"description":"Tool number %d: does a thing with its text argument and answers.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"what to work on"}},"required":["text"]},"annotations":{"readOnlyHint":true}}`, raw, i)
		_, err := reg.Register(s, tools.Definition{
			Name: "mcp__s__" + raw, Description: "d",
			Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "ok"}, nil },
			Origin:  tools.Origin{Server: "s", RawName: raw, Listing: 1}, MCPTool: []byte(listing),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return reg
}

// BenchmarkPinCheck is the pin check's cost: per call (the guard with
// pins against the guard without, no rules), and per listing of 100 tools
// (List with the policy's hide hook against List without).
//
//	go test -run '^$' -bench PinCheck ./services/policy
func BenchmarkPinCheck(b *testing.B) {
	call := tools.Call{Caller: tools.Caller{Kind: "chat"}, Name: "mcp__s__tool_042", Args: []byte(`{"text":"x"}`)}
	for _, pinned := range []bool{false, true} {
		b.Run(fmt.Sprintf("guard/pins=%v", pinned), func(b *testing.B) {
			reg := pinnedServer(b, 100)
			cfg := Config{Default: rules.Allow}
			if pinned {
				cfg.Pins.Dir = b.TempDir()
			}
			p, err := New(reg, cfg, "")
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := p.Guard(ctx, call); err != nil { // first use: trusted, pinned
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Guard(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("hide/one tool", func(b *testing.B) {
		reg := pinnedServer(b, 100)
		p, err := New(reg, Config{Default: rules.Allow, Pins: PinsConfig{Dir: b.TempDir()}}, "")
		if err != nil {
			b.Fatal(err)
		}
		def, _ := reg.Get("mcp__s__tool_042")
		caller := tools.Caller{Kind: "gateway"}
		if p.hides(caller, &def) {
			b.Fatal("hidden on first use")
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = p.hides(caller, &def)
		}
	})
	for _, pinned := range []bool{false, true} {
		b.Run(fmt.Sprintf("list100/pins=%v", pinned), func(b *testing.B) {
			reg := pinnedServer(b, 100)
			if pinned {
				p, err := New(reg, Config{Default: rules.Allow, Pins: PinsConfig{Dir: b.TempDir()}}, "")
				if err != nil {
					b.Fatal(err)
				}
				s := host.NewScope(context.Background(), "policy", nil)
				b.Cleanup(func() { _ = s.Dispose(0) })
				reg.OnHide(s, p.hides)
			}
			caller := tools.Caller{Kind: "gateway"}
			if n := len(reg.List(caller)); n != 100 {
				b.Fatalf("%d tools listed, want 100", n)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = reg.List(caller)
			}
		})
	}
}
