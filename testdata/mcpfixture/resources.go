package main

// Resources and prompts, behind -resources N and -prompts, so the default
// server (tools only) stays as the tool tests know it.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addResources registers n text resources fixture://doc/001..n, an image
// (fixture://image.png), a binary (fixture://data.bin), the template
// fixture://doc/{n}, the add-resource tool, which adds a resource at
// runtime (the server then sends notifications/resources/list_changed), and
// touch-resource, which tells a resource's subscribers it changed.
// With -page-size the lists come in pages.
func addResources(server *mcp.Server, n int) {
	doc := func(i int) string { return fmt.Sprintf("fixture://doc/%03d", i) }
	text := func(uri string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "the text of " + uri}}}
	}
	for i := 1; i <= n; i++ {
		server.AddResource(&mcp.Resource{URI: doc(i), Name: fmt.Sprintf("doc %d", i), MIMEType: "text/plain", Description: fmt.Sprintf("Document number %d.", i)},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return text(req.Params.URI), nil
			})
	}
	server.AddResource(&mcp.Resource{URI: "fixture://image.png", Name: "image", MIMEType: "image/png", Description: "A 4x4 PNG."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "image/png", Blob: tinyPNG}}}, nil
		})
	server.AddResource(&mcp.Resource{URI: "fixture://data.bin", Name: "data", MIMEType: "application/octet-stream", Description: "256 bytes 0..255."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			data := make([]byte, 256)
			for i := range data {
				data[i] = byte(i)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: data}}}, nil
		})
	server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fixture://doc/{n}", Name: "doc by number", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			num := strings.TrimPrefix(req.Params.URI, "fixture://doc/")
			if _, err := strconv.Atoi(num); err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return text(req.Params.URI), nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "touch-resource", Description: "Send notifications/resources/updated for uri to its subscribers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
			if err := server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI}); err != nil {
				return nil, nil, err
			}
			return textResult("touched " + in.URI), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "add-resource", Description: "Add a text resource fixture://added/<name> at runtime (the server then sends notifications/resources/list_changed)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addToolIn) (*mcp.CallToolResult, any, error) {
			uri := "fixture://added/" + cmpOr(in.Name, "added")
			server.AddResource(&mcp.Resource{URI: uri, Name: cmpOr(in.Name, "added"), MIMEType: "text/plain"},
				func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return text(req.Params.URI), nil
				})
			return textResult("added " + uri), nil, nil
		})
}

// withSubscriptions makes opts accept resources/subscribe when the fixture
// has resources (go-sdk advertises the capability only with a handler);
// the touch-resource tool then sends notifications/resources/updated to the
// subscribers. Each subscribe is appended to the -cancel-file events, so a
// test can wait for one.
func withSubscriptions(opts *mcp.ServerOptions, o options) *mcp.ServerOptions {
	if o.resources > 0 {
		events := &eventLog{path: o.cancelFile}
		opts.SubscribeHandler = func(_ context.Context, req *mcp.SubscribeRequest) error {
			events.add("subscribe " + req.Params.URI)
			return nil
		}
		opts.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			events.add("unsubscribe " + req.Params.URI)
			return nil
		}
	}
	return opts
}

// addPrompts registers the prompts echo {text, times?}, picture (text, an
// image and an embedded resource) and the add-prompt tool, which adds a
// prompt at runtime (notifications/prompts/list_changed).
func addPrompts(server *mcp.Server) {
	server.AddPrompt(&mcp.Prompt{Name: "echo", Description: "Repeat a text.", Arguments: []*mcp.PromptArgument{
		{Name: "text", Description: "what to repeat", Required: true},
		{Name: "times", Description: "how many times (default 1)"},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		times, err := strconv.Atoi(cmpOr(req.Params.Arguments["times"], "1"))
		if err != nil || times < 1 {
			return nil, fmt.Errorf("times must be a positive number, not %q", req.Params.Arguments["times"])
		}
		return &mcp.GetPromptResult{Description: "echo", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: strings.Repeat(req.Params.Arguments["text"], times)}},
		}}, nil
	})
	server.AddPrompt(&mcp.Prompt{Name: "picture", Description: "A text, an image and an embedded resource."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			// As a zod-validated server (every TypeScript one) has it: a
			// prompts/get without an arguments object is invalid.
			if req.Params.Arguments == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments: expected object, received undefined"}
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Look at this:"}},
				{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: tinyPNG}},
				{Role: "assistant", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fixture://note", MIMEType: "text/plain", Text: "a note"}}},
			}}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "add-prompt", Description: "Add a prompt at runtime (the server then sends notifications/prompts/list_changed)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addToolIn) (*mcp.CallToolResult, any, error) {
			name := cmpOr(in.Name, "added")
			server.AddPrompt(&mcp.Prompt{Name: name, Description: "A prompt added at runtime."},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "added prompt " + name}}}}, nil
				})
			return textResult("added prompt " + name), nil, nil
		})
}

type touchIn struct {
	URI string `json:"uri" jsonschema:"the resource that changed"`
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
