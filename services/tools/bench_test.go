package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

// benchRegistry has 1,000 registered tools, one of them the no-op
// "mcp__bench__noop" that the benchmarks call.
func benchRegistry(b *testing.B, opts ...*tools.Options) *tools.Registry {
	var o *tools.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	r := tools.New(o)
	for i := range 999 {
		mustRegister(b, r, tools.Definition{
			Name:        fmt.Sprintf("mcp__s%02d__tool_%03d", i%20, i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			Execute: func(context.Context, tools.Call) (tools.Output, error) {
				return tools.Output{}, nil
			},
		})
	}
	content := []tools.Content{tools.Text("ok")}
	mustRegister(b, r, tools.Definition{Name: "mcp__bench__noop", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		return tools.Output{Value: true, Content: content}, nil
	}})
	return r
}

// BenchmarkExecute measures the registry's overhead around a no-op tool
// with 1,000 registered tools: without hooks, with 8 hooks that match the
// tool (3 pre-execute, 3 guards, 2 post-execute) and with 8 that do not.
func BenchmarkExecute(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"q":"x"}`)
	pre := func(context.Context, *tools.Call) error { return nil }
	guard := func(context.Context, tools.Call) error { return nil }
	post := func(context.Context, tools.Call, *tools.Result) error { return nil }
	install := func(r *tools.Registry, patterns []string) {
		for i, p := range patterns {
			switch {
			case i < 3:
				r.OnPreExecute(testScope(b), p, pre)
			case i < 6:
				r.OnGuard(testScope(b), p, guard)
			default:
				r.OnPostExecute(testScope(b), p, post)
			}
		}
	}
	cases := []struct {
		name     string
		patterns []string
		caller   tools.Caller
	}{
		{"hooks=0", nil, testCaller},
		{"hooks=8-matching", []string{"*", "mcp__*", "mcp__bench__*", "*", "mcp__*", "*noop", "mcp__bench__noop", "*"}, testCaller},
		{"hooks=8-other", []string{"mcp__s01__*", "read", "x*", "mcp__s02__*", "*_000", "mcp__s03__*", "mcp__s04__*", "write"}, testCaller},
		{"hooks=8-matching/mask", []string{"*", "mcp__*", "mcp__bench__*", "*", "mcp__*", "*noop", "mcp__bench__noop", "*"},
			tools.Caller{Kind: "model", Mask: &tools.Mask{Allow: []string{"mcp__*"}, Deny: []string{"mcp__s01__*"}}}},
	}
	// The baseline: the tool's own function, called directly, so that the
	// registry's overhead reads as a difference within one run.
	b.Run("direct", func(b *testing.B) {
		def, _ := benchRegistry(b).Get("mcp__bench__noop")
		call := tools.Call{Caller: testCaller, Name: def.Name, Args: args}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := def.Execute(ctx, call); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r := benchRegistry(b)
			install(r, c.patterns)
			b.ReportAllocs()
			for b.Loop() {
				if res := r.Execute(ctx, c.caller, "mcp__bench__noop", args); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
	// The same calls from GOMAXPROCS goroutines at once: ns/op near the
	// serial figure divided by GOMAXPROCS means the registry serializes
	// none of its callers.
	for _, c := range cases {
		b.Run(c.name+"/parallel", func(b *testing.B) {
			r := benchRegistry(b)
			install(r, c.patterns)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if res := r.Execute(ctx, c.caller, "mcp__bench__noop", args); res.Err != nil {
						b.Error(res.Err)
						return
					}
				}
			})
		})
	}
	// A tool with an OutputSchema of the common shape (what go-sdk infers
	// from a Go struct) returning a decoded JSON object: the validation
	// every call pays.
	b.Run("output-schema", func(b *testing.B) {
		r := benchRegistry(b)
		value := map[string]any{"sum": 5.0}
		mustRegister(b, r, tools.Definition{
			Name:         "mcp__bench__typed",
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number","description":"a plus b"}},"required":["sum"],"additionalProperties":false}`),
			Execute: func(context.Context, tools.Call) (tools.Output, error) {
				return tools.Output{Value: value, Content: []tools.Content{tools.Text("5")}}, nil
			},
		})
		b.ReportAllocs()
		for b.Loop() {
			if res := r.Execute(ctx, testCaller, "mcp__bench__typed", args); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	})
}

// BenchmarkAssemble measures building and serializing the tool list of
// 1,000 tools.
func BenchmarkAssemble(b *testing.B) {
	r := benchRegistry(b)
	ctx := context.Background()
	b.Run("Assemble", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Assemble(ctx, testCaller); err != nil {
				b.Fatal(err)
			}
		}
	})
	a, _ := r.Assemble(ctx, testCaller)
	b.Run("ToolsJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.ToolsJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		tools.Match("mcp__*__search*", "mcp__github__search_code")
	}
}

// BenchmarkArguments is the cost the arguments' one view adds to a call:
// Execute of a no-op tool with an issue's arguments, without an input
// schema (decoding alone), with a schema of the common shape (the fast
// check) and with one that needs the general validator (enum, minLength).
//
//	go test -run '^$' -bench Arguments ./services/tools
func BenchmarkArguments(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"owner":"dev","repo":"dsh-host","title":"It broke","body":"Steps: run it.","labels":["bug","p1"],"milestone":3}`)
	props := `"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"},"body":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}},"milestone":{"type":"integer"}`
	for _, c := range []struct{ name, schema string }{
		{"no-schema", ""},
		{"schema/fast", `{"type":"object","properties":{` + props + `},"required":["owner","repo","title"]}`},
		{"schema/general", `{"type":"object","properties":{` + props + `,"state":{"enum":["open","closed"]}},"required":["owner","repo","title"],"minProperties":1}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := tools.New(nil)
			mustRegister(b, r, tools.Definition{Name: "t", InputSchema: json.RawMessage(c.schema),
				Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "ok"}, nil }})
			b.ReportAllocs()
			for b.Loop() {
				if res := r.Execute(ctx, tools.Caller{Kind: "bench"}, "t", args); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}
