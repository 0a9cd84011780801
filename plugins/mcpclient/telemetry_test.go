package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestCallSpanErrorAttributes: an upstream call's client span says what
// ended it after OTel's MCP conventions: a JSON-RPC error answer's code in
// error.type and rpc.response.status_code (not a word of ours), an
// isError result tool_error, a lost connection transport_error.
func TestCallSpanErrorAttributes(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer tp.Shutdown(context.Background())
	ctx := context.Background()
	for _, err := range []error{
		fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool"}),
		&jsonrpc.Error{Code: -32001, Message: "the server's own"},
		errors.New("connection closed"),
	} {
		_, span := tp.Tracer("t").Start(ctx, "tools/call x")
		(&client{}).endCallSpan(span, ctx, ctx, nil, err)
	}
	var got []map[string]string
	for _, s := range exporter.GetSpans() {
		m := map[string]string{"status": s.Status.Code.String()}
		for _, a := range s.Attributes {
			m[string(a.Key)] = a.Value.Emit()
		}
		got = append(got, m)
	}
	want := []map[string]string{
		{"status": "Error", "error.type": "-32602", "rpc.response.status_code": "-32602"},
		{"status": "Error", "error.type": "-32001", "rpc.response.status_code": "-32001"},
		{"status": "Error", "error.type": "transport_error"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}
