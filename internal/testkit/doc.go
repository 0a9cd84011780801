// Package testkit holds the project's test kits, one package each:
// mcptest (in-process MCP servers and clients), oauthtest (an authorization
// server), openaitest (a scripted OpenAI-compatible model), tlstest
// (loopback certificates), replicas (the multi-replica load driver),
// golden (golden-file comparison, -update to refresh) and leaks
// (goroutines settle, bounded, before goleak's end-of-binary check).
// They are real protocol peers, not mocks, so tests drive what users run.
package testkit
