package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		switch method {
		case "resources/list", "resources/templates/list", "prompts/list":
			// With or without auth: the gate decides per caller (doors.go).
			return g.bridge.listDoors(ctx, method, req, next)
		}
		if !g.perIdentity {
			return next(ctx, method, req)
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
			return l.Middleware(next)(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}
