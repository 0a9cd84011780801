package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// observed runs Execute's call inside a span (execute_tool, after OTel's
// GenAI conventions) and records its outcome and duration in the metrics.
// Execute calls it only when tracing or metrics are on: off, a call pays
// one nil check.
func (r *Registry) observed(ctx context.Context, caller Caller, name string, args json.RawMessage, ch *Channels) Result {
	start := time.Now()
	var server string
	var series *toolSeries
	if e := r.lookup(name); e != nil {
		server = e.def.Origin.Server
		if series = e.series.Load(); !series.current() && r.metrics != nil {
			series = r.metrics.tool(server, name)
			e.series.Store(series)
		}
	} else {
		// Names nobody registered share one series: a caller must not
		// be able to grow the metrics without bound.
		series = r.metrics.tool("", UnknownTool)
	}
	var span trace.Span
	if r.tracer != nil {
		attrs := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("dsh.caller.kind", string(caller.Kind)),
		}
		if server != "" {
			attrs = append(attrs, attribute.String(telemetry.AttrServerName, server))
		}
		ctx, span = r.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	}
	res := r.unobserved(ctx, caller, name, args, ch)
	outcome := res.Outcome()
	series.record(outcome, time.Since(start))
	if span != nil {
		if outcome != OutcomeOK {
			span.SetAttributes(attribute.String("error.type", outcome))
			msg := "the tool answered with a failure"
			if res.Err != nil {
				msg = res.Err.Error()
			}
			span.SetStatus(codes.Error, msg)
		}
		span.End()
	}
	return res
}

// Outcome classifies the result for metrics and traces: one of
// telemetry's Outcome constants ("ok", "tool_error", "refused",
// "unknown_tool", "cancelled", "invalid_output", "error").
func (res Result) Outcome() string {
	err := res.Err
	switch {
	case err == nil && !res.Failed:
		return OutcomeOK
	case err == nil:
		return OutcomeToolError
	case errors.Is(err, ErrUnknownTool):
		return OutcomeUnknownTool
	case errors.Is(err, ErrRefused):
		return OutcomeRefused
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return OutcomeCancelled
	case errors.Is(err, ErrInvalidOutput):
		return OutcomeInvalidOutput
	case isToolError(err):
		return OutcomeToolError
	}
	return OutcomeError
}

// isToolError is errors.As for a *ToolError, apart so that a successful
// call does not pay for the target escaping to the heap.
func isToolError(err error) bool {
	var te *ToolError
	return errors.As(err, &te)
}
