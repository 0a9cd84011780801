// Package sampling names who can answer an MCP server's sampling request
// (sampling/createMessage) made during a call: a caller that has a model
// at hand, such as the gateway forwarding to its own client, sets a
// [Sampler] as the call's tools.Channels.Sampler; mcp-client asks it.
// Without one the request fails with [ErrNoSampler]. The agent plugin sets
// one on the calls its model makes, answered by that model once a person
// approves (the server argument says which server asks); nothing installs
// a default.
package sampling

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sampler answers one sampling request of server (the serverName of the
// MCP server asking).
type Sampler func(ctx context.Context, server string, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)

// ErrNoSampler is the error of a sampling request nobody can answer.
var ErrNoSampler = errors.New("sampling is not available: the host offers MCP servers no model of its own; " +
	"only a call made through the gateway by a client that declared the sampling capability can sample")
