// Package remote holds what mcp-client's HTTP transports (Streamable HTTP
// and the legacy HTTP+SSE) share: an HTTP client per instance that adds the
// configured headers, URLs whose secrets never reach a log (Redact), and
// the hint a failed first POST gives (Explain).
//
// transport: sse reaches a server that speaks only the 2024-11-05 HTTP+SSE
// transport (url is its SSE endpoint, often .../sse), through go-sdk's
// SSEClientTransport with a stream that outlives the connection attempt; a
// streamable-http URL whose first POST is answered 400, 404 or 405 fails with a
// hint to try it.
package remote
