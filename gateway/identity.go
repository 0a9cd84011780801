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

// listsPerCaller answers a tools/list of a caller with an identity (a
// token's) with what the registry offers that caller: the tools its
// policy rules deny it whatever the arguments are left out. The server's
// tool set is the identity-less caller's; a call of a tool left out is
// still refused by the policy's guard, saying which rule.
func (g *Gateway) listsPerCaller(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil || identityOf(req) == nil {
			return res, err
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok {
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
			return l.middleware(next)(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}
