package mcpfold

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// syntheticSchema is a schema shaped like what real MCP servers publish:
// a handful of described properties, an enum, a nested object, required
// fields.
func syntheticSchema(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"owner":{"type":"string","description":"Repository owner (user or organization) for request %d"},`+
		`"repo":{"type":"string","description":"Repository name"},`+
		`"state":{"type":"string","enum":["open","closed","all"],"description":"Filter by state"},`+
		`"perPage":{"type":"integer","minimum":1,"maximum":100,"description":"Results per page (default 30)"},`+
		`"options":{"type":"object","properties":{"sort":{"type":"string","enum":["created","updated"]},"direction":{"type":"string","enum":["asc","desc"]}},"additionalProperties":false}`+
		`},"required":["owner","repo"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`, i))
}

func noop(context.Context, tools.Call) (tools.Output, error) {
	return tools.Output{Value: "ok"}, nil
}

// fleetRegistry registers servers × perServer synthetic MCP tools and one
// native tool.
func fleetRegistry(b *testing.B, servers, perServer int) *tools.Registry {
	b.Helper()
	reg := tools.New(nil)
	for s := range servers {
		for i := range perServer {
			_, err := reg.Register(testScope(b, "client"), tools.Definition{
				Name:        fmt.Sprintf("mcp__server%02d__operation_%02d", s, i),
				Description: fmt.Sprintf("Perform operation %d against server %d: lists, filters and returns matching records with pagination. Use it when the user asks about records of this kind.", i, s),
				InputSchema: syntheticSchema(i),
				Execute:     noop,
				Origin:      tools.Origin{Server: fmt.Sprintf("server%02d", s)},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := reg.Register(testScope(b, "native"), tools.Definition{Name: "bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`), Execute: noop}); err != nil {
		b.Fatal(err)
	}
	return reg
}

func startFold(b *testing.B, reg *tools.Registry) {
	b.Helper()
	a, err := newAdapter(reg, Defaults(), nil, "fold", nil)
	if err != nil {
		b.Fatal(err)
	}
	s := host.NewScope(context.Background(), "fold", nil)
	b.Cleanup(func() { _ = s.Dispose(0) })
	if err := a.start(s, nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAssembledSize reports the model-facing tools JSON size for 1, 10
// and 50 servers of 40 tools, unfolded and folded, with the time to
// assemble it.
func BenchmarkAssembledSize(b *testing.B) {
	for _, servers := range []int{1, 10, 50} {
		for _, folded := range []bool{false, true} {
			mode := "unfolded"
			if folded {
				mode = "folded"
			}
			b.Run(fmt.Sprintf("servers=%d/tools=%d/%s", servers, servers*40, mode), func(b *testing.B) {
				reg := fleetRegistry(b, servers, 40)
				// The unfolded baseline is the MCP client alone, without
				// the meta-tools.
				if folded {
					startFold(b, reg)
				}
				ctx := context.Background()
				var size, count int
				b.ReportAllocs()
				for b.Loop() {
					asm, err := reg.Assemble(ctx, testCaller)
					if err != nil {
						b.Fatal(err)
					}
					out, err := asm.ToolsJSON()
					if err != nil {
						b.Fatal(err)
					}
					size, count = len(out), len(asm.Tools)
				}
				b.ReportMetric(float64(size), "bytes/prompt")
				b.ReportMetric(float64(size)/4, "~tokens/prompt")
				b.ReportMetric(float64(count), "tools/prompt")
			})
		}
	}
}

// BenchmarkCallOverhead compares a direct registry Execute of a no-op MCP
// tool with the same call through mcp_call (argument parse, checks, schema
// validation, nested Execute), among 400 registered tools.
func BenchmarkCallOverhead(b *testing.B) {
	reg := fleetRegistry(b, 10, 40)
	startFold(b, reg)
	ctx := context.Background()
	args := json.RawMessage(`{"owner":"dsh-host","repo":"dsh-host","state":"open","perPage":10}`)
	wrapped := json.RawMessage(`{"tool":"mcp__server03__operation_07","arguments":` + string(args) + `}`)
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := reg.Execute(ctx, testCaller, "mcp__server03__operation_07", args); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	})
	b.Run("mcp_call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res := reg.Execute(ctx, testCaller, callName, wrapped)
			if res.Err != nil || res.Value != "ok" {
				b.Fatal(res.Err, res.Value)
			}
		}
	})
	masked := tools.Caller{Kind: "model", Mask: &tools.Mask{Deny: []string{"bash"}}}
	b.Run("mcp_call/masked-caller", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res := reg.Execute(ctx, masked, callName, wrapped); res.Err != nil || res.Value != "ok" {
				b.Fatal(res.Err, res.Value)
			}
		}
	})
}

// BenchmarkSearch measures mcp_list {query} over 2000 tools.
func BenchmarkSearch(b *testing.B) {
	reg := fleetRegistry(b, 50, 40)
	startFold(b, reg)
	ctx := context.Background()
	args := json.RawMessage(`{"query":"operation 7 records pagination"}`)
	b.ReportAllocs()
	for b.Loop() {
		if res := reg.Execute(ctx, testCaller, listName, args); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}
