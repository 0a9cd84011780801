package mcptest

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenAcked returns a receiving middleware for a client, and a channel
// closed once the server acknowledged the client's subscriptions/listen.
func listenAcked() (mcp.Middleware, <-chan struct{}) {
	acked := make(chan struct{})
	var once sync.Once
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				once.Do(func() { close(acked) })
			}
			return next(ctx, method, req)
		}
	}, acked
}

// listens reports whether go-sdk's client opened a subscriptions/listen
// on cs (2026-07-28), as it does for each list_changed handler in opts
// whose list the server says changes.
func listens(cs *mcp.ClientSession, opts *mcp.ClientOptions) bool {
	init := cs.InitializeResult()
	if opts == nil || init == nil || init.ProtocolVersion < "2026-07-28" || init.Capabilities == nil {
		return false
	}
	caps := init.Capabilities
	return opts.ToolListChangedHandler != nil && caps.Tools != nil && caps.Tools.ListChanged ||
		opts.PromptListChangedHandler != nil && caps.Prompts != nil && caps.Prompts.ListChanged ||
		opts.ResourceListChangedHandler != nil && caps.Resources != nil && caps.Resources.ListChanged
}

// waitListening waits, up to d, for acked when cs listens: go-sdk sends
// subscriptions/listen without waiting for the server to take it up, and
// a list change the server makes before is told to nobody.
func waitListening(cs *mcp.ClientSession, opts *mcp.ClientOptions, acked <-chan struct{}, d time.Duration) bool {
	if !listens(cs, opts) {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-acked:
		return true
	case <-t.C:
		return false
	}
}
