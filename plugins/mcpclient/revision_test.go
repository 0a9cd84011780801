package mcpclient

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRepeatableByTheSpecsDefaults: only a tool that says it reads only,
// or that it is idempotent and (explicitly, against the default) not
// destructive, has a refused call sent again.
func TestRepeatableByTheSpecsDefaults(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name string
		h    *mcp.ToolAnnotations
		want bool
	}{
		{"no annotations", nil, false},
		{"empty annotations", &mcp.ToolAnnotations{}, false},
		{"title only", &mcp.ToolAnnotations{Title: "Send"}, false},
		{"read-only", &mcp.ToolAnnotations{ReadOnlyHint: true}, true},
		{"read-only, destructive (ignored)", &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, true},
		{"idempotent, destructive by default", &mcp.ToolAnnotations{IdempotentHint: true}, false},
		{"idempotent, destructive", &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes}, false},
		{"idempotent, not destructive", &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &no}, true},
		{"not destructive, not idempotent", &mcp.ToolAnnotations{DestructiveHint: &no}, false},
		{"closed world alone", &mcp.ToolAnnotations{OpenWorldHint: &no}, false},
	} {
		if got := repeatable(c.h); got != c.want {
			t.Errorf("%s: repeatable = %v, want %v", c.name, got, c.want)
		}
	}
}
