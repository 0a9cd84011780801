package main

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type rewriteIn struct {
	Name        string `json:"name" jsonschema:"the tool to rewrite (or add)"`
	Description string `json:"description" jsonschema:"its new description"`
	Title       string `json:"title,omitempty" jsonschema:"its new title"`
	// The schemas are taken as given (any JSON object); an input schema
	// replaces the empty one, an output schema makes the tool answer {}.
	InputSchema  any `json:"inputSchema,omitempty" jsonschema:"its new input schema"`
	OutputSchema any `json:"outputSchema,omitempty" jsonschema:"its new output schema"`
}

// addRewriteTool registers rewrite-tool (-rewrite), which replaces a
// tool's description, title or schemas (or adds a tool) at runtime and so
// sends notifications/tools/list_changed: a server that changes what it
// told the model after a host trusted it (a "rug pull").
func addRewriteTool(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "rewrite-tool", Description: "Replace the description of the tool name (or add it), answering \"rewritten <name>\"."},
		func(_ context.Context, _ *mcp.CallToolRequest, in rewriteIn) (*mcp.CallToolResult, any, error) {
			name := in.Name
			if in.InputSchema == nil && in.OutputSchema == nil {
				mcp.AddTool(server, &mcp.Tool{Name: name, Title: in.Title, Description: in.Description},
					func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
						return textResult("rewritten " + name), nil, nil
					})
				return textResult("rewrote " + name), nil, nil
			}
			t := &mcp.Tool{Name: name, Title: in.Title, Description: in.Description, InputSchema: in.InputSchema, OutputSchema: in.OutputSchema}
			if t.InputSchema == nil {
				t.InputSchema = json.RawMessage(`{"type":"object"}`)
			}
			server.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				res := textResult("rewritten " + name)
				if in.OutputSchema != nil {
					res.StructuredContent = map[string]any{}
				}
				return res, nil
			})
			return textResult("rewrote " + name), nil, nil
		})
}

type removeIn struct {
	Name string `json:"name" jsonschema:"the tool to remove"`
}

// addRemoveTool registers remove-tool (-remove-tool), which removes a
// tool at runtime and so sends notifications/tools/list_changed: a server
// whose tool goes away while a host runs.
func addRemoveTool(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "remove-tool", Description: "Remove the tool name, answering \"removed <name>\"."},
		func(_ context.Context, _ *mcp.CallToolRequest, in removeIn) (*mcp.CallToolResult, any, error) {
			server.RemoveTools(in.Name)
			return textResult("removed " + in.Name), nil, nil
		})
}
