// Package remote holds what mcp-client's HTTP transports (Streamable HTTP
// and the legacy HTTP+SSE) share: an HTTP client per instance that adds the
// configured headers, URLs whose secrets never reach a log (Redact), and
// the hint a failed first POST gives (Explain).
package remote
