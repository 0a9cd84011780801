package toolset

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
