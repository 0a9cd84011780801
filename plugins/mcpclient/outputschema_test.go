package mcpclient

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestStructuredContentCommonSchema covers the schema shape most servers
// advertise (go-sdk infers it from a Go struct), which the fast check
// accepts without jsonschema-go: a valid value passes, and every invalid
// one is still refused with Validate's own words.
func TestStructuredContentCommonSchema(t *testing.T) {
	schema := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"sum": map[string]any{"type": "number", "description": "a plus b"}},
		"required":             []any{"sum"},
		"additionalProperties": false,
	}
	type box struct{ v any }
	var sc atomic.Value
	sc.Store(box{})
	srv := newFakeServer(t, nil)
	srv.srv.AddTool(&mcp.Tool{Name: "add", InputSchema: map[string]any{"type": "object"}, OutputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, StructuredContent: sc.Load().(box).v}, nil
		})
	e := mustStart(t, testConfig("fast"), srv)
	for _, tt := range []struct {
		name  string
		value any
		want  string // in the error; "" means valid
	}{
		{"valid", map[string]any{"sum": 5}, ""},
		{"valid fraction", map[string]any{"sum": 5.5}, ""},
		{"wrong type", map[string]any{"sum": "5"}, `has type "string", want "number"`},
		{"extra property", map[string]any{"sum": 5, "x": 1}, `unexpected additional properties ["x"]`},
		{"missing property", map[string]any{}, `required: missing properties: ["sum"]`},
		{"not an object", []any{5}, `has type "array", want "object"`},
		{"missing", nil, "the result has no structuredContent"},
	} {
		sc.Store(box{tt.value})
		res := e.call(tools.Caller{}, "mcp__fast__add", "{}")
		if tt.want == "" {
			if res.Err != nil {
				t.Errorf("%s: Err = %v", tt.name, res.Err)
			}
			continue
		}
		if !errors.Is(res.Err, tools.ErrInvalidOutput) || !strings.Contains(res.Err.Error(), tt.want) ||
			!strings.Contains(res.Err.Error(), `mcp-client(fast): structuredContent does not match the tool's outputSchema`) {
			t.Errorf("%s: Err = %v, want ErrInvalidOutput saying %q", tt.name, res.Err, tt.want)
		}
	}
}
