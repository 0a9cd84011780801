package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// MCP carries the W3C trace context in a request's params._meta, under the
// keys traceparent and tracestate (what OTel's MCP semantic conventions
// and the MCP SDKs that propagate it use).

// metaCarrier reads and writes the trace context in an MCP _meta map.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	switch v := m[key].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Extract returns ctx with the remote span context that meta (an MCP
// request's _meta) carries, if any, as the parent of the spans started
// from it.
func Extract(ctx context.Context, meta map[string]any) context.Context {
	if meta == nil {
		return ctx
	}
	if _, ok := meta["traceparent"]; !ok {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, metaCarrier(meta))
}

// Inject writes the span context of ctx into meta (traceparent, and
// tracestate when there is one), creating the map when it is nil, and
// returns it; without a valid span context it returns meta unchanged.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	propagation.TraceContext{}.Inject(ctx, metaCarrier(meta))
	return meta
}
