package gateway

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/reconcile"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// promptName is the name a prompt is served under: named like the tools
// (mcp__<server>__<prompt>), or the server's own name in raw mode.
func (b *bridge) promptName(p resources.Prompt) string {
	if b.g.raw {
		return p.Name
	}
	return p.Public
}

// lookupPrompt finds the prompt served as name.
func (b *bridge) lookupPrompt(name string) (resources.Prompt, bool) {
	if !b.g.raw {
		return b.res.LookupPrompt(name)
	}
	for _, p := range b.res.Prompts() {
		if p.Name == name {
			return p, true
		}
	}
	return resources.Prompt{}, false
}

// syncPrompts brings the server's prompts in line with the service's. The
// caller holds syncMu.
func (b *bridge) syncPrompts() {
	var want []reconcile.Entry[string, *mcp.Prompt]
	for _, p := range b.res.Prompts() {
		x := p.Prompt
		x.Name = b.promptName(p)
		want = append(want, reconcile.Entry[string, *mcp.Prompt]{Key: x.Name, State: listing(&x), Value: &x})
	}
	if b.prompts.Sync(want).Changed() || b.g.lists.sig(listPrompts) == "" {
		b.g.lists.setSig(listPrompts, signature(b.prompts.Served()))
	}
}

// promptSet is the served prompts' reconciler.
func (b *bridge) promptSet() {
	b.prompts = reconcile.New(reconcile.Ops[string, *mcp.Prompt]{
		Changing: func() { b.g.lists.changing(listPrompts) },
		Remove:   func(names ...string) { b.g.server.RemovePrompts(names...) },
		Add: func(e reconcile.Entry[string, *mcp.Prompt]) error {
			err := guard(func() { b.g.server.AddPrompt(e.Value, b.getPrompt) })
			if err != nil {
				b.g.logger.Warn("gateway: prompt not served", "prompt", e.Key, "err", err)
			}
			return err
		},
		Duplicate: func(e reconcile.Entry[string, *mcp.Prompt]) {
			b.g.logger.Warn("gateway: two prompts have one name; serving the first", "prompt", e.Key)
		},
	})
}

// getPrompt gets a prompt from its server with the client's arguments; the
// messages come back as the server sent them.
func (b *bridge) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p, ok := b.lookupPrompt(req.Params.Name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt " + strconv.Quote(req.Params.Name)}
	}
	if err := b.gateDoor(req, p.Server, tools.KindPrompts, "prompt "+req.Params.Name); err != nil {
		return nil, err
	}
	get := func(ctx context.Context, ch *tools.Channels) (*mcp.GetPromptResult, error) {
		return b.res.GetPrompt(ctx, p.Public, req.Params.Arguments, ch)
	}
	var res *mcp.GetPromptResult
	var err error
	if needsRoundTrip(req.Session) {
		// The server may ask the client during the get: a round trip.
		var out any
		var ask mcp.InputRequest
		var state string
		out, ask, state, err = b.g.trips.roundTrip(b.g.ctx, ctx, "prompts/get", req.Session, req.Params.RequestState, req.Params.InputResponses,
			func(ctx context.Context, ch *tools.Channels) (any, error) { return get(ctx, ch) })
		if ask != nil {
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{inputKey: ask}, RequestState: state}, nil
		}
		res, _ = out.(*mcp.GetPromptResult)
	} else {
		res, err = get(ctx, forwardRequests(req.Session))
	}
	if err != nil {
		if errors.Is(err, resources.ErrUnknownPrompt) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		return nil, wireError(err)
	}
	return res, nil
}
