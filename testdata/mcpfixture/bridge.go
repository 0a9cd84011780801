package main

// Completion and sampling, behind -complete and -sample (the gateway's
// bridge tests).

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// completionWords are what -complete offers for any argument, filtered by
// the typed prefix.
var completionWords = []string{"alpha", "alpine", "beta"}

// withCompletion answers completion/complete when o.complete: the words
// that start with the value typed, for a prompt's or a template's argument.
func withCompletion(opts *mcp.ServerOptions, o options) *mcp.ServerOptions {
	if o.complete {
		opts.CompletionHandler = func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var values []string
			for _, w := range completionWords {
				if strings.HasPrefix(w, req.Params.Argument.Value) {
					values = append(values, req.Params.Ref.Type+":"+req.Params.Argument.Name+":"+w)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values}}, nil
		}
	}
	return opts
}

// addSampleTool registers sample, which asks the client's model for a
// completion of its prompt through an input request (a 2026-07-28 round
// trip, or sampling/createMessage for an older client) and answers with
// the result as JSON.
func addSampleTool(server *mcp.Server) {
	type sampleIn struct {
		Prompt string `json:"prompt" jsonschema:"what to ask the model"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "sample", Description: "Ask the client's model to complete a prompt."},
		func(_ context.Context, req *mcp.CallToolRequest, in sampleIn) (*mcp.CallToolResult, any, error) {
			resp, ok := req.Params.InputResponses["sample"]
			if !ok {
				ask := &mcp.CreateMessageParams{MaxTokens: 50, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"sample": ask}, RequestState: "sampling"}, nil, nil
			}
			b, err := json.Marshal(resp)
			if err != nil {
				return nil, nil, err
			}
			return textResult(string(b)), nil, nil
		})
}

// addRootsTool registers roots, which asks the client for its roots
// (roots/list, sent during the call: a go-sdk server does so only on
// 2025-11-25, so run it with -protocol 2025-11-25) and answers with their
// URIs, one a line.
func addRootsTool(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "roots", Description: "List the client's roots."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 roots stay functional through their deprecation window.
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return textResult(strings.Join(uris, "\n")), nil, nil
		})
}
