package tools

import "context"

// LogMessage is one log message an MCP server sent while a tool call ran
// (MCP's notifications/message): Level is MCP's ("debug", "info",
// "notice", "warning", "error", "critical", "alert", "emergency"), Logger
// may be empty, Data is any JSON value.
type LogMessage struct {
	Level  string
	Logger string
	Data   any
}

type logKey struct{}

// WithLog returns ctx carrying fn, which receives the server log messages
// that arrive while the tool calls made with that ctx run (ReportLog). A
// caller that relays them (a gateway, to its client) sets it; fn may be
// called from other goroutines and must not block for long.
func WithLog(ctx context.Context, fn func(LogMessage)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, logKey{}, fn)
}

// WantsLog reports whether someone relays ctx's server log messages.
func WantsLog(ctx context.Context) bool {
	_, ok := ctx.Value(logKey{}).(func(LogMessage))
	return ok
}

// ReportLog passes m to the function WithLog set on ctx; without one it
// does nothing.
func ReportLog(ctx context.Context, m LogMessage) {
	if fn, ok := ctx.Value(logKey{}).(func(LogMessage)); ok {
		fn(m)
	}
}
