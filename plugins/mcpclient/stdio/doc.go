// Package stdio starts a stdio MCP server for mcp-client: one process per
// connection, its environment scrubbed, its stdout filtered, its stderr
// logged, and its teardown bounded.
//
// The environment (Env) is what Inherit keeps of the ambient one, with the
// entry's own env on top: InheritScrub (the default) drops every variable
// whose name or value looks like a secret (secretName, secretValue),
// InheritMinimal keeps only what a program needs to run (childenv.Minimal),
// InheritAll keeps everything.
//
// A line on the server's stdout that is not a JSON-RPC message (a banner
// like "Memory server starting...", "[INFO] ready", a JSON log line like
// pino's {"level":30,...}) is logged and skipped, never fatal: stdout
// passes through a streaming line filter (jsonLines) before go-sdk reads
// it. Stderr goes to the logger line by line (lineLogger), and its last
// lines explain a failed start (Transport.Explain).
//
// Closing the connection closes stdin, then sends SIGTERM and SIGKILL a
// second apart, then kills what is left of the process group. On Linux the
// server is SIGKILLed when the host dies, however it dies (parentDeathSignal,
// onOwnThread).
package stdio
