package result

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkAnswer is what a gateway call costs the result: the value of
// an add answer, read as a gateway reads it (the decoded answer), with its
// JSON made on first ask (lazy) or at once (eager, as before).
func BenchmarkAnswer(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"sum":5}`}}, StructuredContent: map[string]any{"sum": 5.0}}
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = FromAnswer(res).MCPCallToolResult()
		}
	})
	b.Run("eager", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := FromAnswer(res)
			r.encoded()
			_ = r.MCPCallToolResult()
		}
	})
}
