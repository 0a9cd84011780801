package main

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addMetaTool registers meta (-echo-meta), which answers with its own
// request's params._meta as JSON text: what the client sent beside the
// arguments (a trace context's traceparent and tracestate, a progress
// token), so that a test sees what reached the server.
func addMetaTool(server *mcp.Server) {
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
