package mcpclient

import (
	"context"
	"errors"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/bridge"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/calls"
	"github.com/dsh-host/dsh-host/services/tools"
)

// startCallSpan starts the client span of one upstream tools/call (after
// OTel's MCP conventions: "tools/call <tool>", kind client) and carries
// its trace context to the server in params._meta (traceparent,
// tracestate), so that a server that traces continues the caller's trace.
func (c *client) startCallSpan(ctx context.Context, cn *conn, params *mcp.CallToolParams) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", params.Name),
		attribute.String(telemetry.AttrServerName, c.opt.cfg.ServerName),
	}
	if c.opt.cfg.Transport == TransportStdio {
		attrs = append(attrs, telemetry.StdioAttrs()...)
	} else {
		attrs = append(attrs, telemetry.HTTPAttrs(c.opt.cfg.URL)...)
	}
	if id := cn.session.ID(); id != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", id))
	}
	ctx, span := c.tracer.Start(ctx, "tools/call "+params.Name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	params.Meta = telemetry.Inject(ctx, params.Meta)
	return ctx, span
}

// endCallSpan ends span with the call's outcome: error.type is tool_error
// for an isError answer (a failure MCP carries as a result), the JSON-RPC
// code for an error answer (with rpc.response.status_code), else what
// kind of failure ended the call.
func (c *client) endCallSpan(span trace.Span, ctx, cctx context.Context, res *mcp.CallToolResult, err error) {
	var errType, msg string
	var timeout *calls.Timeout
	switch {
	case err == nil && res != nil && res.IsError:
		errType, msg = tools.OutcomeToolError, "the server answered isError"
	case err == nil:
	case ctx.Err() != nil:
		errType, msg = tools.OutcomeCancelled, err.Error()
	case errors.As(context.Cause(cctx), &timeout):
		errType, msg = "timeout", err.Error()
	case bridge.Answered(err):
		span.SetAttributes(telemetry.RPCErrorAttrs(err)...)
		msg = err.Error()
	default:
		errType, msg = "transport_error", err.Error()
	}
	if errType != "" {
		span.SetAttributes(attribute.String(telemetry.AttrErrorType, errType))
	}
	if msg != "" {
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// traceContextOut is a sending middleware of the upstream session, when
// tracing is on: every request (resources/read, prompts/get...) carries
// the trace context of the request that caused it in _meta, unless it has
// one already (tools/call's own span, startCallSpan).
func traceContextOut(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if trace.SpanContextFromContext(ctx).IsValid() {
			if params := req.GetParams(); params != nil && !reflect.ValueOf(params).IsNil() {
				if meta := params.GetMeta(); meta["traceparent"] == nil {
					params.SetMeta(telemetry.Inject(ctx, meta))
				}
			}
		}
		return next(ctx, method, req)
	}
}
