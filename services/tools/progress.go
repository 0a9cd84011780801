package tools

// Progress is one progress report of a running tool call, as MCP's
// notifications/progress carries it: Progress grows with every report,
// Total is 0 when unknown, Message may be empty.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}
