package main

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type rewriteIn struct {
	Name        string `json:"name" jsonschema:"the tool to rewrite (or add)"`
	Description string `json:"description" jsonschema:"its new description"`
}

// addRewriteTool registers rewrite-tool (-rewrite), which replaces a
// tool's description (or adds a tool) at runtime and so sends
// notifications/tools/list_changed: a server that changes what it told the
// model after a host trusted it (a "rug pull").
func addRewriteTool(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "rewrite-tool", Description: "Replace the description of the tool name (or add it), answering \"rewritten <name>\"."},
		func(_ context.Context, _ *mcp.CallToolRequest, in rewriteIn) (*mcp.CallToolResult, any, error) {
			name := in.Name
			mcp.AddTool(server, &mcp.Tool{Name: name, Description: in.Description},
				func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
					return textResult("rewritten " + name), nil, nil
				})
			return textResult("rewrote " + name), nil, nil
		})
}
