// Package sampling carries who can answer an MCP server's sampling request
// (sampling/createMessage) made during a call: a caller that has a model at
// hand, such as the gateway forwarding to its own client, puts a [Sampler]
// on the call's context with [With]; mcp-client asks it ([From]). Without
// one the request fails with [ErrNoSampler]. The agent plugin puts one on
// the calls its model makes, answered by that model once a person approves
// ([WithServer] tells it which server asks); nothing installs a default.
package sampling

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sampler answers one sampling request.
type Sampler func(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)

// ErrNoSampler is the error of a sampling request nobody can answer.
var ErrNoSampler = errors.New("sampling is not available: the host offers MCP servers no model of its own; " +
	"only a call made through the gateway by a client that declared the sampling capability can sample")

type key struct{}

// With returns ctx whose calls' sampling requests s answers.
func With(ctx context.Context, s Sampler) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// From returns ctx's sampler, or nil.
func From(ctx context.Context) Sampler {
	s, _ := ctx.Value(key{}).(Sampler)
	return s
}

type serverKey struct{}

// WithServer returns ctx naming the MCP server (its serverName) whose
// sampling request a Sampler is called for: mcp-client puts it there, so
// that a sampler that asks a person can say who asks.
func WithServer(ctx context.Context, server string) context.Context {
	return context.WithValue(ctx, serverKey{}, server)
}

// Server returns the serverName WithServer put on ctx, "" when none.
func Server(ctx context.Context) string {
	s, _ := ctx.Value(serverKey{}).(string)
	return s
}
