package main

import (
	"context"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addHoldTool registers hold (-hold-file): a call that stays in flight
// until the test creates the file, then answers "released". Unlike slow's
// fixed sleep, how long it is in flight is the test's decision, not a
// guess at how fast the machine runs the checks made meanwhile. It logs
// "hold started" (and "hold released" or "hold cancelled") to events.
func addHoldTool(server *mcp.Server, release string, events *eventLog) {
	mcp.AddTool(server, &mcp.Tool{Name: "hold", Description: "Stay in flight until the test releases the call; stop early when cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			events.add("hold started")
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, err := os.Stat(release); err == nil {
					events.add("hold released")
					return textResult("released"), nil, nil
				}
				select {
				case <-ctx.Done():
					events.add("hold cancelled")
					return nil, nil, ctx.Err()
				case <-tick.C:
				}
			}
		})
}
