package main

// The tools of -progress and -elicit: a call that reports progress, and
// calls that ask the client for input.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type progressIn struct {
	Steps int `json:"steps" jsonschema:"how many progress notifications to send"`
	MS    int `json:"ms" jsonschema:"milliseconds between two notifications"`
}

// addProgressTool registers progress {steps, ms}: steps notifications
// ("step i of n") ms apart, then the text "done after n steps".
func addProgressTool(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "progress", Description: "Report progress steps times, ms apart, then answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-time.After(time.Duration(in.MS) * time.Millisecond):
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
				if token != nil {
					err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d of %d", i, in.Steps),
					})
					if err != nil {
						return nil, nil, err
					}
				}
			}
			return textResult(fmt.Sprintf("done after %d steps", in.Steps)), nil, nil
		})
}

// askSchema is the form of the ask tool: a required name (with
// nameDefault as its default, if given), a titled enum with a default, and
// an integer with a default.
func askSchema(nameDefault string) map[string]any {
	name := map[string]any{"type": "string", "title": "Your name"}
	if nameDefault != "" {
		name["default"] = nameDefault
	}
	return map[string]any{
		"type":     "object",
		"required": []any{"name"},
		"properties": map[string]any{
			"name":  name,
			"color": map[string]any{"type": "string", "oneOf": []any{map[string]any{"const": "r", "title": "Red"}, map[string]any{"const": "b", "title": "Blue"}}, "default": "b"},
			"count": map[string]any{"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
		},
	}
}

type askIn struct {
	NameDefault string `json:"nameDefault,omitempty" jsonschema:"a default for the name field"`
}

type askURLIn struct {
	URL string `json:"url" jsonschema:"the URL the user should open"`
}

// addElicitTools registers ask (a form) and ask-url (a URL to open). Each
// asks through an input request, which go-sdk turns into the round trip
// of 2026-07-28 or, for an older client, an elicitation/create request,
// and answers with the action and content that came back as JSON.
func addElicitTools(server *mcp.Server) {
	answer := func(req *mcp.CallToolRequest, ask *mcp.ElicitParams) (*mcp.CallToolResult, any, error) {
		resp, ok := req.Params.InputResponses["ask"]
		if !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"ask": ask}, RequestState: "asked"}, nil, nil
		}
		b, err := json.Marshal(resp)
		if err != nil {
			return nil, nil, err
		}
		return textResult(string(b)), nil, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "ask", Description: "Ask the user for a name, a color and a count."},
		func(_ context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
			return answer(req, &mcp.ElicitParams{Message: "Tell me about you", RequestedSchema: askSchema(in.NameDefault)})
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ask-url", Description: "Ask the user to open a URL."},
		func(_ context.Context, req *mcp.CallToolRequest, in askURLIn) (*mcp.CallToolResult, any, error) {
			return answer(req, &mcp.ElicitParams{Mode: "url", Message: "Please sign in", URL: in.URL, ElicitationID: "el-1"})
		})
}

// addAskInlineTool registers ask-inline, which asks the client for a name
// with elicitation/create during the call, as servers written for
// 2025-11-25 do (go-sdk's conformance server among them). On a 2026-07-28
// session go-sdk refuses to send it, and the tool fails with that refusal.
// Its variants differ only in their annotations: ask-inline-readonly
// (readOnlyHint), ask-inline-idempotent (idempotentHint, destructiveHint
// false) and ask-inline-idempotent-destructive (idempotentHint alone, so
// destructive by the spec's default). Each acts before it asks: it appends
// its name to acts (when set), so a test sees how often it ran.
func addAskInlineTool(server *mcp.Server, acts *eventLog) {
	no := false
	for _, t := range []*mcp.Tool{
		{Name: "ask-inline", Description: "Ask the user for a name during the call."},
		{Name: "ask-inline-readonly", Description: "Ask the user for a name during the call; reads only.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "ask-inline-idempotent", Description: "Ask the user for a name during the call; idempotent, not destructive.",
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &no}},
		{Name: "ask-inline-idempotent-destructive", Description: "Ask the user for a name during the call; idempotent, destructive by default.",
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
	} {
		mcp.AddTool(server, t, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			acts.add(t.Name)
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: askSchema("")})
			if err != nil {
				return nil, nil, err
			}
			b, err := json.Marshal(res)
			if err != nil {
				return nil, nil, err
			}
			return textResult(string(b)), nil, nil
		})
	}
}

// withProtocol limits opts to o.protocol, when set: a client then speaks
// that revision (2025-11-25: initialize, logging/setLevel, server requests
// such as elicitation/create, and on HTTP the standalone GET stream).
func withProtocol(opts *mcp.ServerOptions, o options) *mcp.ServerOptions {
	if o.protocol != "" {
		opts.SupportedProtocolVersions = []string{o.protocol}
	}
	return opts
}
