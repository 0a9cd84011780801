package gateway

import (
	"context"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/services/tools"
)

// traced is the outermost receiving middleware when tracing is on: a
// server span per MCP request (after OTel's MCP conventions: named
// "<method> <tool or prompt>", with mcp.method.name, mcp.session.id,
// mcp.protocol.version, gen_ai.tool.name, network.transport and, over
// HTTP, network.protocol.name and server.address and port (the
// listener's, addr), and on a failure error.type and
// rpc.response.status_code: the JSON-RPC code), continuing the trace
// context the client sent in params._meta (traceparent, tracestate).
// Without tracing it is not installed at all.
func traced(tracer trace.Tracer, addr func() string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			params := req.GetParams()
			if params != nil && reflect.ValueOf(params).IsNil() {
				params = nil
			}
			if params != nil {
				ctx = telemetry.Extract(ctx, params.GetMeta())
			}
			name := method
			attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
			switch p := params.(type) {
			case *mcp.CallToolParamsRaw:
				name += " " + p.Name
				attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name), attribute.String("gen_ai.operation.name", "execute_tool"))
			case *mcp.GetPromptParams:
				name += " " + p.Name
				attrs = append(attrs, attribute.String("gen_ai.prompt.name", p.Name))
			}
			// go-sdk gives a request that came over HTTP its headers; a
			// session of a front end's (serve --stdio) has none.
			if extra := req.GetExtra(); extra != nil && extra.Header != nil {
				attrs = append(attrs, telemetry.HTTPAttrs(addr())...)
			} else {
				attrs = append(attrs, telemetry.StdioAttrs()...)
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				if id := ss.ID(); id != "" {
					attrs = append(attrs, attribute.String("mcp.session.id", id))
				}
				if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
					attrs = append(attrs, attribute.String("mcp.protocol.version", ip.ProtocolVersion))
				}
			}
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			defer span.End()
			res, err := next(ctx, method, req)
			// A failed request's result is a typed nil (an unknown tool,
			// a call cut by a drain): not a result to read.
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				span.SetAttributes(attribute.String("error.type", tools.OutcomeToolError))
				span.SetStatus(codes.Error, "the tool call failed (isError)")
			}
			if err != nil {
				if ctx.Err() != nil {
					span.SetAttributes(attribute.String(telemetry.AttrErrorType, tools.OutcomeCancelled))
				} else {
					span.SetAttributes(telemetry.RPCErrorAttrs(err)...)
				}
				span.SetStatus(codes.Error, err.Error())
			}
			return res, err
		}
	}
}

// countSessions is how many sessions the gateway serves, for the metrics.
func (g *Gateway) countSessions() int {
	n := 0
	for range g.server.Sessions() {
		n++
	}
	return n
}

// listenAddr is the HTTP listener's address, "" before it listens.
func (g *Gateway) listenAddr() string {
	if a := g.addr.Load(); a != nil {
		return *a
	}
	return ""
}
