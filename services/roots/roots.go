// Package roots names whose roots an MCP server's roots/list made during
// a call gets: a caller that has roots of its own, such as the gateway
// forwarding to a client that declared them, sets a [Lister] as the call's
// tools.Channels.Roots; mcp-client asks it and otherwise answers with the
// roots its composition entry lists.
package roots

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lister lists the caller's roots.
type Lister func(ctx context.Context) ([]*mcp.Root, error)
