package main

// The tools of -annotated: a tool with every optional field of a listing,
// and a tool that logs.

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type annotatedOut struct {
	Echo string `json:"echo"`
}

type logIn struct {
	Text string `json:"text" jsonschema:"the text of the messages"`
}

// addAnnotatedTools registers annotated {text} (title "Annotated echo",
// readOnlyHint, an icon, _meta {"fixture/kind": "annotated"}, and an
// outputSchema; it answers the text and structuredContent {echo}) and log
// {text}, which sends the text as log messages at debug, info and warning
// (logger "fixture"), then answers "logged" at once (the last message
// right before the answer, as servers do).
func addAnnotatedTools(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{
		Name:        "annotated",
		Title:       "Annotated echo",
		Description: "Echo the text, with a title, annotations, an icon and _meta.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Echo (annotations)"},
		Icons:       []mcp.Icon{{Source: "https://example.com/echo.png", MIMEType: "image/png"}},
		Meta:        mcp.Meta{"fixture/kind": "annotated"},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in logIn) (*mcp.CallToolResult, annotatedOut, error) {
		return textResult(in.Text), annotatedOut{Echo: in.Text}, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "log", Description: "Send the text as log messages at debug, info and warning, then answer."},
		func(ctx context.Context, req *mcp.CallToolRequest, in logIn) (*mcp.CallToolResult, any, error) {
			for _, level := range []mcp.LoggingLevel{"debug", "info", "warning"} {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "fixture", Data: in.Text}); err != nil {
					return nil, nil, err
				}
			}
			return textResult("logged"), nil, nil
		})
}
