package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeBusy is the JSON-RPC error code of a request refused because its
// session, or the gateway, has as many requests in flight as it may (a
// code of the range JSON-RPC leaves to servers).
const codeBusy = -32000

// callLimit caps the requests in flight per session and per gateway, so
// that no client, however many requests it sends at once, can have more
// tool calls running (and more answers held in memory) than the caps.
type callLimit struct {
	perSession, total int
	refused           *tally

	mu        sync.Mutex
	n         int
	bySession map[mcp.Session]int
}

// uncounted are the requests that are never refused: they cost nothing,
// or refusing them would break the session (a listen lasts as long as
// the session).
func uncounted(method string) bool {
	switch method {
	case "initialize", "ping", "subscriptions/listen":
		return true
	}
	return strings.HasPrefix(method, "notifications/")
}

// middleware refuses a request past a cap with an error that names it.
func (l *callLimit) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if uncounted(method) {
			return next(ctx, method, req)
		}
		ss := req.GetSession()
		if err := l.acquire(ss); err != nil {
			l.refused.Add()
			return nil, err
		}
		defer l.release(ss)
		return next(ctx, method, req)
	}
}

func (l *callLimit) acquire(ss mcp.Session) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.bySession[ss] >= l.perSession:
		return &jsonrpc.Error{Code: codeBusy, Message: fmt.Sprintf(
			"the gateway is busy: this session has %d requests in flight, its limit (maxCallsPerSession); wait for one to end and retry", l.perSession)}
	case l.n >= l.total:
		return &jsonrpc.Error{Code: codeBusy, Message: fmt.Sprintf(
			"the gateway is busy: it has %d requests in flight, its limit (maxCalls); retry later", l.total)}
	}
	l.n++
	l.bySession[ss]++
	return nil
}

func (l *callLimit) release(ss mcp.Session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.bySession[ss]--; l.bySession[ss] == 0 {
		delete(l.bySession, ss)
	}
}
