package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// storeServed records which registry tool each served name calls, for
// listsPerCaller. The caller holds syncMu.
func (g *Gateway) storeServed(current map[string]toolState) {
	m := make(map[string]string, len(current))
	for name, st := range current {
		m[name] = st.public
	}
	g.served.Store(&m)
}

// listsPerCaller answers, with PerIdentity, each tools/list with what
// the registry offers its caller (its token's identity, or none for the
// static token): the tools its policy rules deny it whatever the
// arguments are left out of the surface, which holds what any identity
// may see. A call of a tool left out is still refused by the policy's
// guard, saying which rule.
func (g *Gateway) listsPerCaller(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !g.perIdentity {
			return next(ctx, method, req)
		}
		switch method {
		case "resources/list", "resources/templates/list", "prompts/list", "resources/read", "prompts/get":
			return g.bridge.perCaller(ctx, method, req, next)
		}
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil {
			return res, err
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok || lr == nil {
			return res, err
		}
		offered := map[string]bool{}
		for _, d := range g.reg.List(g.callerOf(req)) {
			offered[d.Name] = true
		}
		served := *g.served.Load()
		kept := make([]*mcp.Tool, 0, len(lr.Tools))
		for _, t := range lr.Tools {
			public, known := served[t.Name]
			if known && !offered[public] {
				if _, registered := g.reg.Get(public); registered {
					continue
				}
			}
			kept = append(kept, t)
		}
		lr.Tools = kept
		return lr, nil
	}
}

// limitIdentities applies the HTTP listener's limits per identity, when
// it has them.
func (g *Gateway) limitIdentities(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if l := g.idLimits.Load(); l != nil {
			return l.middleware(g, next)(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}

// closedServers are the MCP servers whose every tool the registry hides
// from caller (the policy denies it each of them, whatever the
// arguments): their resources and prompts are not the caller's either. A
// server without tools is open to all.
func (g *Gateway) closedServers(caller tools.Caller) map[string]bool {
	closed := map[string]bool{}
	for _, d := range g.reg.ListAll() {
		if d.Origin.Server != "" {
			closed[d.Origin.Server] = true
		}
	}
	for _, d := range g.reg.List(caller) {
		delete(closed, d.Origin.Server)
	}
	return closed
}

// perCaller narrows the resources and prompts a caller lists to those of
// the servers open to it, and refuses it a read or get of a closed
// server's (a resource read through a template's URI is not matched to
// its server, and is not refused).
func (b *bridge) perCaller(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	if b.res == nil {
		return next(ctx, method, req)
	}
	closed := b.g.closedServers(b.g.callerOf(req))
	if len(closed) == 0 {
		return next(ctx, method, req)
	}
	refused := func(what string) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: what + ": the policy allows you none of its server's tools, nor its resources and prompts"}
	}
	serverOf := map[string]string{}
	for _, r := range b.res.List(resources.Filter{}) {
		if _, dup := serverOf[r.URI]; !dup {
			serverOf[r.URI] = r.Server
		}
	}
	switch method {
	case "resources/read":
		if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && closed[serverOf[p.URI]] {
			return nil, refused("resource " + p.URI)
		}
		return next(ctx, method, req)
	case "prompts/get":
		if p, ok := req.GetParams().(*mcp.GetPromptParams); ok {
			if pr, found := b.lookupPrompt(p.Name); found && closed[pr.Server] {
				return nil, refused("prompt " + p.Name)
			}
		}
		return next(ctx, method, req)
	}
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	switch r := res.(type) {
	case *mcp.ListResourcesResult:
		if r == nil {
			break
		}
		kept := make([]*mcp.Resource, 0, len(r.Resources))
		for _, x := range r.Resources {
			if !closed[serverOf[x.URI]] {
				kept = append(kept, x)
			}
		}
		r.Resources = kept
	case *mcp.ListResourceTemplatesResult:
		if r == nil {
			break
		}
		templateServer := map[string]string{}
		for _, t := range b.res.Templates(resources.Filter{}) {
			if _, dup := templateServer[t.URITemplate]; !dup {
				templateServer[t.URITemplate] = t.Server
			}
		}
		kept := make([]*mcp.ResourceTemplate, 0, len(r.ResourceTemplates))
		for _, x := range r.ResourceTemplates {
			if !closed[templateServer[x.URITemplate]] {
				kept = append(kept, x)
			}
		}
		r.ResourceTemplates = kept
	case *mcp.ListPromptsResult:
		if r == nil {
			break
		}
		kept := make([]*mcp.Prompt, 0, len(r.Prompts))
		for _, x := range r.Prompts {
			if pr, found := b.lookupPrompt(x.Name); !found || !closed[pr.Server] {
				kept = append(kept, x)
			}
		}
		r.Prompts = kept
	}
	return res, err
}
