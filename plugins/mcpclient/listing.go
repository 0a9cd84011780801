package mcpclient

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listing is the tool as its server listed it, for tools.Definition.MCPTool:
// what a gateway serves its clients besides the name, description and input
// schema (kept once, in the definition's InputSchema).
func listing(t *mcp.Tool) json.RawMessage {
	l := *t
	l.InputSchema = nil
	b, err := json.Marshal(&l)
	if err != nil {
		return nil
	}
	return b
}

// MCPContent returns the result's content blocks as the server sent them
// (gateway.MCPResult: a gateway passes them to its clients).
func (r CallResult) MCPContent() []json.RawMessage { return r.Content }

// MCPStructuredContent returns the result's structuredContent, nil when
// the server sent none.
func (r CallResult) MCPStructuredContent() json.RawMessage { return r.StructuredContent }

// MCPCallToolResult returns the result's blocks and structuredContent as
// go-sdk decoded them from the server's answer (gateway.MCPResult: a
// gateway serves them as they are, without decoding the JSON again). It
// returns nil for a value not made from an answer, or whose blocks were
// replaced since: its JSON is then what stands.
func (r CallResult) MCPCallToolResult() *mcp.CallToolResult {
	d := r.decoded
	if d == nil || !sameBytes(r.StructuredContent, d.structured) || len(r.Content) != len(d.content) {
		return nil
	}
	for i, b := range r.Content {
		if !sameBytes(b, d.content[i]) {
			return nil
		}
	}
	return &mcp.CallToolResult{Content: d.res.Content, StructuredContent: d.res.StructuredContent}
}

// sameBytes reports whether a and b are the same bytes in memory, not
// merely equal ones.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
