package gateway

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	srv := b.g.server
	want := map[string]string{}
	var add []*mcp.Prompt
	for _, p := range b.res.Prompts() {
		name := b.promptName(p)
		if _, dup := want[name]; dup {
			b.g.logger.Warn("gateway: two prompts have one name; serving the first", "prompt", name, "shadowed", p.Server)
			continue
		}
		x := p.Prompt
		x.Name = name
		sig := listing(&x)
		want[name] = sig
		if b.prompts[name] != sig {
			add = append(add, &x)
		}
	}
	var remove []string
	for name := range b.prompts {
		if _, ok := want[name]; !ok {
			remove = append(remove, name)
		}
	}
	changed := len(remove)+len(add) > 0
	if changed {
		b.g.lists.changing(listPrompts)
	}
	if len(remove) > 0 {
		srv.RemovePrompts(remove...)
	}
	for _, p := range add {
		if err := guard(func() { srv.AddPrompt(p, b.getPrompt) }); err != nil {
			b.g.logger.Warn("gateway: prompt not served", "prompt", p.Name, "err", err)
			delete(want, p.Name)
		}
	}
	b.prompts = want
	if changed || b.g.lists.sig(listPrompts) == "" {
		b.g.lists.setSig(listPrompts, signature(want))
	}
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
	get := func(ctx context.Context) (*mcp.GetPromptResult, error) {
		return b.res.GetPrompt(ctx, p.Public, req.Params.Arguments)
	}
	var res *mcp.GetPromptResult
	var err error
	if needsRoundTrip(req.Session) {
		// The server may ask the client during the get: a round trip.
		var out any
		var ask mcp.InputRequest
		var state string
		out, ask, state, err = b.g.trips.roundTrip(b.g.ctx, ctx, "prompts/get", req.Session, req.Params.RequestState, req.Params.InputResponses,
			func(ctx context.Context) (any, error) { return get(ctx) })
		if ask != nil {
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{inputKey: ask}, RequestState: state}, nil
		}
		res, _ = out.(*mcp.GetPromptResult)
	} else {
		res, err = get(b.g.forwardRequests(ctx, req.Session))
	}
	if err != nil {
		if errors.Is(err, resources.ErrUnknownPrompt) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		return nil, wireError(err)
	}
	return res, nil
}
