package main

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addMetaTool registers the tool and the prompt meta (-echo-meta), which
// answer with their own request's params._meta as JSON text: what the
// client sent beside the arguments (a trace context's traceparent and
// tracestate, a progress token), so that a test sees what reached the
// server.
func addMetaTool(server *mcp.Server) {
	server.AddPrompt(&mcp.Prompt{Name: "meta", Description: "A message holding this request's _meta, as JSON."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			b, err := json.Marshal(req.Params.GetMeta())
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: string(b)}}}}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "meta", Description: "Answer with this request's _meta, as JSON."},
		func(_ context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			meta := req.Params.GetMeta()
			if meta == nil {
				meta = map[string]any{}
			}
			b, err := json.Marshal(meta)
			if err != nil {
				return nil, nil, err
			}
			return textResult(string(b)), nil, nil
		})
}
