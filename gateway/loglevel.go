package gateway

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLevels remembers which sessions asked for log messages with
// logging/setLevel, so that a call relays its server's messages (and waits
// for the last of them, see mcpclient's settleLogs) only for a client that
// wants them. go-sdk keeps the level itself but does not say it.
type logLevels struct {
	mu  sync.Mutex
	set map[*mcp.ServerSession]bool
}

// track is a receiving middleware that records a session's successful
// logging/setLevel, and forgets sessions that have ended.
func (l *logLevels) track(server func() *mcp.Server) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method != "logging/setLevel" || err != nil {
				return res, err
			}
			ss, ok := req.GetSession().(*mcp.ServerSession)
			if !ok {
				return res, err
			}
			live := map[*mcp.ServerSession]bool{}
			for s := range server().Sessions() {
				live[s] = true
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.set == nil {
				l.set = map[*mcp.ServerSession]bool{}
			}
			for s := range l.set {
				if !live[s] {
					delete(l.set, s)
				}
			}
			l.set[ss] = true
			return res, err
		}
	}
}

// wants reports whether the client of req asked for log messages: with
// logging/setLevel on its session, or (2026-07-28) in the request's _meta.
func (l *logLevels) wants(req *mcp.CallToolRequest) bool {
	if level, ok := req.Params.GetMeta()[mcp.MetaKeyLogLevel].(string); ok && level != "" {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set[req.Session]
}
