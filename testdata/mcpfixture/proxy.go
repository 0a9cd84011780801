package main

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveProxy serves on stdio the tools of the stdio server that command
// starts, each call forwarded as it came and each result returned as it
// went (-proxy-of): the least any go-sdk proxy does, a floor against
// which benchmarks measure what a gateway adds.
func serveProxy(ctx context.Context, command string) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpfixture-proxy", Version: "1.0.0"}, nil)
	start, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	upstream, err := client.Connect(start, &mcp.CommandTransport{Command: exec.Command(command), TerminateDuration: time.Second}, nil)
	if err != nil {
		return fmt.Errorf("-proxy-of %s: %w", command, err)
	}
	defer upstream.Close()
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpfixture-proxy", Version: "1.0.0"}, &mcp.ServerOptions{Logger: logger()})
	for tool, err := range upstream.Tools(start, nil) {
		if err != nil {
			return fmt.Errorf("-proxy-of %s: list tools: %w", command, err)
		}
		server.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return upstream.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	return server.Run(ctx, &mcp.StdioTransport{})
}
