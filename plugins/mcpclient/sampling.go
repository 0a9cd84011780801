package mcpclient

import (
	"context"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/calls"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/sampling"
)

// onSample answers a server's sampling/createMessage through the sampler of
// the call it belongs to (sampling.With: the gateway forwarding to its
// client). Like onElicit, a 2026-07-28 round trip comes with the call's
// own context and a 2025-11-25 request is the call's when exactly one is in
// flight; while the answer is awaited, the call's silence timer waits.
// Without a sampler the request fails with sampling.ErrNoSampler.
func (c *client) onSample(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	call := calls.FromContext(ctx)
	if call == nil {
		call = c.calls.Only()
	}
	askCtx := ctx
	if call != nil {
		release := call.Hold()
		defer release()
		askCtx = mergeValues(ctx, call.Caller())
	}
	s := sampling.From(askCtx)
	if s == nil {
		c.log.Warn(c.label+": a sampling request was refused: nobody can answer it here", "err", sampling.ErrNoSampler)
		return nil, sampling.ErrNoSampler
	}
	return s(askCtx, req.Params)
}
