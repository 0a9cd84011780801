package tools

import "context"

// Progress is one progress report of a running tool call, as MCP's
// notifications/progress carries it: Progress grows with every report,
// Total is 0 when unknown, Message may be empty.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

type progressKey struct{}

// WithProgress returns ctx carrying fn, which receives the progress reports
// of the tool calls made with that ctx (ReportProgress). The caller that
// shows progress (the console, the gateway, the agent) sets it; fn may be
// called from other goroutines, one report at a time per call, and must not
// block for long.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress passes p to the function WithProgress set on ctx; without
// one it does nothing. A tool reports with the ctx its Execute got.
func ReportProgress(ctx context.Context, p Progress) {
	if fn, ok := ctx.Value(progressKey{}).(func(Progress)); ok {
		fn(p)
	}
}

// WantsProgress reports whether someone listens to ctx's progress.
func WantsProgress(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(func(Progress))
	return ok
}
