// Package telemetry is how dsh-host observes itself: OpenTelemetry traces
// (a span per MCP request the gateway serves, per tool call through the
// registry, and per upstream request of mcp-client, with the W3C trace
// context carried in the MCP requests' _meta) and Prometheus metrics.
//
// A Telemetry value is made once by the binary (FromEnv, NewMetrics) and
// reaches every instance through the host's base context
// (host.Options.Context, With, From); nothing in this package is global, and
// no OTel global is set. Everything is optional: a nil *Telemetry, a nil
// tracer or nil *Metrics means off, and each method checks for it, so an
// instrumented path costs a nil check and no allocation when off.
package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the tracer of every span dsh-host starts.
const InstrumentationName = "github.com/dsh-host/dsh-host"

// Telemetry is a process's tracer and metrics. The zero value and nil are
// "everything off".
type Telemetry struct {
	tracer  trace.Tracer
	metrics *Metrics
}

// New returns a Telemetry tracing with tp (nil or OTel's no-op provider:
// no traces, and no span code on the call path) and recording into m (nil:
// no metrics).
func New(tp trace.TracerProvider, m *Metrics) *Telemetry {
	t := &Telemetry{metrics: m}
	if _, isNoop := tp.(noop.TracerProvider); tp != nil && !isNoop {
		t.tracer = tp.Tracer(InstrumentationName)
	}
	return t
}

// Tracer returns the tracer, or nil when tracing is off: callers skip
// their spans altogether then, which is what makes "off" free.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// Metrics returns the metrics, or nil when they are off. Every method of
// a nil *Metrics does nothing.
func (t *Telemetry) Metrics() *Metrics {
	if t == nil {
		return nil
	}
	return t.metrics
}

type contextKey struct{}

// With returns ctx carrying t, for host.Options.Context: every scope's
// context then carries it.
func With(ctx context.Context, t *Telemetry) context.Context {
	return context.WithValue(ctx, contextKey{}, t)
}

// From returns the Telemetry ctx carries, or nil (everything off).
func From(ctx context.Context) *Telemetry {
	t, _ := ctx.Value(contextKey{}).(*Telemetry)
	return t
}

// AttrServerName is the span attribute naming the MCP server (its
// composition serverName) a tool belongs to: OTel's MCP conventions have
// server.address for the network peer, nothing for a host's name of it.
const AttrServerName = "dsh.mcp.server.name"
