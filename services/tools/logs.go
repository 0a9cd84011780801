package tools

// LogMessage is one log message an MCP server sent while a tool call ran
// (MCP's notifications/message): Level is MCP's ("debug", "info",
// "notice", "warning", "error", "critical", "alert", "emergency"), Logger
// may be empty, Data is any JSON value.
type LogMessage struct {
	Level  string
	Logger string
	Data   any
}
