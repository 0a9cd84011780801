package main

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addCounterTool registers count (-counter), which answers how many times
// it has been called in this process: state a server keeps, so that a test
// can tell which server process a call reached.
func addCounterTool(server *mcp.Server) {
	var n atomic.Int64
	mcp.AddTool(server, &mcp.Tool{Name: "count", Description: "Count the calls to this tool in this server process."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return textResult(strconv.FormatInt(n.Add(1), 10)), nil, nil
		})
}
