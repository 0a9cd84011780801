package main

import (
	"context"
	"encoding/json"
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

// addOpTool registers op (-op): a tool of a path whose server, like many
// real ones, checks nothing (no validation by go-sdk: a raw handler). It
// answers how many calls reached it and the arguments of the last, as it
// read them, so that a test can tell that a refused call never arrived.
func addOpTool(server *mcp.Server) {
	var n atomic.Int64
	server.AddTool(&mcp.Tool{Name: "op", Description: "Act on a path; answers the calls that reached it and the arguments received.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"pad":{"type":"number"}},"required":["path"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(strconv.FormatInt(n.Add(1), 10) + " " + string(req.Params.Arguments)), nil
		})
}
