package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileMarkup is text a web page must show, never run: each piece, run
// as markup, would request beacon (a test's loopback listener counting
// hits) or open a dialog.
func hostileMarkup(beacon, where string) string {
	return fmt.Sprintf(`<script>fetch(%[1]q)</script><img src=x onerror="fetch('%[1]s');alert('%[2]s')"> <a href="javascript:fetch('%[1]s')">%[2]s</a> <img src="%[1]s">`,
		beacon+"/"+where, where)
}

// addHostileTool registers (-hostile URL) a tool whose name, title,
// description, schema and result carry markup aimed at a web console.
func addHostileTool(server *mcp.Server, beacon string) {
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"q":    map[string]any{"type": "string", "description": hostileMarkup(beacon, "param")},
			"mode": map[string]any{"type": "string", "enum": []string{hostileMarkup(beacon, "enum"), "plain"}},
		},
	})
	server.AddTool(&mcp.Tool{
		Name:        `x"><img src=x onerror=alert(1)>`,
		Title:       hostileMarkup(beacon, "title"),
		Description: hostileMarkup(beacon, "description"),
		InputSchema: json.RawMessage(schema),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := textResult(hostileMarkup(beacon, "result"))
		res.StructuredContent = map[string]any{"html": hostileMarkup(beacon, "structured")}
		return res, nil
	})
}
