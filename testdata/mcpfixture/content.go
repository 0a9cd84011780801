package main

// The flags -stray-stdout, -content-tools, -unusable-tools and -sse: what
// real servers do that a host must cope with.
//
//	huge-image       text and a 2560x1440 PNG (over a host's 2000 px side limit)
//	embedded         a text resource, a binary (PDF) resource, a JSON blob
//	                 resource and a resource link
//	audio            a 0.5 s WAV clip
//	app-only         _meta.ui.visibility ["app"] (an MCP App's own tool)
//	app-and-model    _meta.ui.visibility ["app", "model"]
//	task-required    execution.taskSupport "required"

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// strayLines are what -stray-stdout prints before serving: a banner, as
// the memory server prints, a line of ANSI-colored log, a log line in
// brackets, and a JSON log line (pino's), which is JSON but no JSON-RPC.
var strayLines = []string{"Memory server starting...", "\x1b[32minfo\x1b[0m ready on stdio", "[INFO] server starting", `{"level":30,"msg":"ready"}`}

func printStray() {
	for _, l := range strayLines {
		fmt.Println(l)
	}
}

func addContentTools(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "huge-image", Description: "Return text and a 2560x1440 PNG screenshot."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a screenshot follows"},
				&mcp.ImageContent{MIMEType: "image/png", Data: hugePNG()},
			}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "embedded", Description: "Return embedded resources and a resource link."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://notes.txt", MIMEType: "text/plain", Text: "fixture notes"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://report.pdf", MIMEType: "application/pdf", Blob: fixturePDF}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://data.json", MIMEType: "application/json", Blob: []byte(`{"n":1}`)}},
				&mcp.ResourceLink{URI: "fixture://later.md", Name: "later", MIMEType: "text/markdown"},
			}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "audio", Description: "Return a 0.5 s WAV clip."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: mcptest.WAV(4000)}}}, nil, nil
		})
}

var fixturePDF = []byte("%PDF-1.4\n% a fixture document\n%%EOF\n")

// hugePNG is a 2560x1440 gradient.
func hugePNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 2560, 1440))
	for y := range 1440 {
		for x := range 2560 {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x / 10), uint8(y / 6), 128, 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

func addUnusableTools(server *mcp.Server) {
	answer := func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
		return textResult("called"), nil, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "app-only", Description: "A tool only an MCP App's UI calls.",
		Meta: mcp.Meta{"ui": map[string]any{"visibility": []string{"app"}}}}, answer)
	mcp.AddTool(server, &mcp.Tool{Name: "app-and-model", Description: "A tool both an app and the model call.",
		Meta: mcp.Meta{"ui": map[string]any{"visibility": []string{"app", "model"}}}}, answer)
	mcp.AddTool(server, &mcp.Tool{Name: "task-required", Description: "A tool that must run as a task."}, answer)
	// go-sdk's Tool has no execution field: add it to the listing.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && method == "tools/list" {
				return &taskListing{lt}, err
			}
			return res, err
		}
	})
}

// taskListing is a tools/list result that marks task-required as such.
type taskListing struct{ *mcp.ListToolsResult }

func (t *taskListing) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(t.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	tools, _ := m["tools"].([]any)
	for _, tl := range tools {
		if tm, ok := tl.(map[string]any); ok && tm["name"] == "task-required" {
			tm["execution"] = map[string]any{"taskSupport": "required"}
		}
	}
	return json.Marshal(m)
}
