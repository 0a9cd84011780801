// Package telemetry is how dsh-host observes itself: OpenTelemetry traces
// (a span per MCP request the gateway serves, per tool call through the
// registry, and per upstream request of mcp-client, with the W3C trace
// context carried in the MCP requests' _meta) and Prometheus metrics.
//
// The host hands each run of an instance its tracer and a registerer
// (host.Scope.Tracer, host.Scope.Registerer), as Alloy hands its
// components theirs; each package declares its own metrics (a Def) beside
// the code that counts them. This package holds what they share: the
// declarations' type and the table docs/operations.md shows, the process's
// registry (NewRegistry), the tracer provider the OTEL_* variables ask for
// (TracingFromEnv) and the trace context in MCP's _meta (Inject,
// Extract). Nothing in it is global, and no OTel global is set.
package telemetry

// AttrServerName is the span attribute naming the MCP server (its
// composition serverName) a tool belongs to: OTel's MCP conventions have
// server.address for the network peer, nothing for a host's name of it.
const AttrServerName = "dsh.mcp.server.name"
