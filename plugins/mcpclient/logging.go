package mcpclient

// The server's log messages: the level the instance asks for, and the
// messages written to its log and relayed to the callers of its calls
// (calls.Table.RelayLog).

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolNoSetLevel is the first revision without logging/setLevel (the
// level then travels in each request's _meta).
const protocolNoSetLevel = "2026-07-28"

// mcpLogLevel is the lowest MCP log level the instance's logger shows.
func (c *client) mcpLogLevel() mcp.LoggingLevel {
	ctx := context.Background()
	switch {
	case c.opt.logger.Enabled(ctx, slog.LevelDebug):
		return "debug"
	case c.opt.logger.Enabled(ctx, slog.LevelInfo):
		return "info"
	case c.opt.logger.Enabled(ctx, slog.LevelWarn):
		return "warning"
	}
	return "error"
}

// logsByRequest reports whether the server takes its log level in each
// request's _meta (2026-07-28 on) rather than through logging/setLevel.
func logsByRequest(res *mcp.InitializeResult) bool {
	return res != nil && res.ProtocolVersion >= protocolNoSetLevel
}

// logLevels asks a server that logs for the messages the instance's log
// shows: on a revision with logging/setLevel once, on one without it in
// each request (cn.requestLogLevel, which startCall puts in _meta).
func (c *client) logLevels(ctx context.Context, cn *conn) {
	res := cn.session.InitializeResult()
	cn.logs = res != nil && res.Capabilities != nil && res.Capabilities.Logging != nil
	switch {
	case !cn.logs:
	case logsByRequest(res):
		cn.requestLogLevel = c.mcpLogLevel()
	default:
		//lint:ignore SA1019 logging is deprecated from 2026-07-28, and this path serves only the revisions before it.
		if err := cn.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: c.mcpLogLevel()}); err != nil {
			c.opt.logger.Debug(c.label+": the server refused logging/setLevel; it logs at its own level", "err", err)
		}
	}
}

// onLog writes a server's notifications/message to the instance's log at
// the mapped level: debug as debug; info and notice as info; warning as
// warn; error, critical, alert and emergency as error.
func (c *client) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	c.calls.RelayLog(p)
	level := slog.LevelDebug
	switch p.Level {
	case "info", "notice":
		level = slog.LevelInfo
	case "warning":
		level = slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		level = slog.LevelError
	}
	text, ok := p.Data.(string)
	if !ok {
		b, err := json.Marshal(p.Data)
		if err != nil {
			text = fmt.Sprint(p.Data)
		} else {
			text = string(b)
		}
	}
	attrs := []any{"severity", string(p.Level)}
	if p.Logger != "" {
		attrs = append(attrs, "logger", p.Logger)
	}
	attrs = append(attrs, "data", text)
	c.opt.logger.Log(ctx, level, "server log", attrs...)
}
