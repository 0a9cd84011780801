// Package roots carries whose roots an MCP server's roots/list made during
// a call gets: a caller that has roots of its own, such as the gateway
// forwarding to a client that declared them, puts a [Lister] on the call's
// context with [With]; mcp-client asks it ([From]) and otherwise answers
// with the roots its composition entry lists.
package roots

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lister lists the caller's roots.
type Lister func(ctx context.Context) ([]*mcp.Root, error)

type key struct{}

// With returns ctx whose calls' roots/list requests l answers.
func With(ctx context.Context, l Lister) context.Context {
	return context.WithValue(ctx, key{}, l)
}

// From returns ctx's lister, or nil.
func From(ctx context.Context) Lister {
	l, _ := ctx.Value(key{}).(Lister)
	return l
}
