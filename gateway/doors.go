package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// One gate for every door: a server's resources, templates and prompts
// are served to a caller only where the tools registry's Gate (the
// policy) opens them, with or without auth. Lists are narrowed per
// request (listDoors); a read, get, subscribe or completion asks the gate
// for the server that will answer it (gateDoor), a resource read through
// a template's URI included.

// gateDoor asks the gate whether req's caller may reach server's doors of
// kind; its refusal names what was asked for.
func (b *bridge) gateDoor(req mcp.Request, server, kind, what string) error {
	if err := b.g.reg.Gate(b.g.callerOf(req), server, kind); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: what + ": " + err.Error()}
	}
	return nil
}

// doorsOpen remembers, for one request, which servers' doors the gate
// opens to its caller.
type doorsOpen struct {
	reg    *tools.Registry
	caller tools.Caller
	kind   string
	seen   map[string]bool
}

func (d *doorsOpen) open(server string) bool {
	if server == "" {
		return false // no longer the service's: not served
	}
	open, ok := d.seen[server]
	if !ok {
		open = d.reg.Gate(d.caller, server, d.kind) == nil
		d.seen[server] = open
	}
	return open
}

// listDoors narrows the resources, templates and prompts a caller lists
// to those of the servers the gate opens to it.
func (b *bridge) listDoors(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil || b.res == nil {
		return res, err
	}
	doors := func(kind string) *doorsOpen {
		return &doorsOpen{reg: b.g.reg, caller: b.g.callerOf(req), kind: kind, seen: map[string]bool{}}
	}
	switch r := res.(type) {
	case *mcp.ListResourcesResult:
		if r == nil {
			break
		}
		serverOf := map[string]string{}
		for _, x := range b.res.List(resources.Filter{}) {
			if _, dup := serverOf[x.URI]; !dup {
				serverOf[x.URI] = x.Server // reads go to the first
			}
		}
		d := doors(tools.KindResources)
		kept := make([]*mcp.Resource, 0, len(r.Resources))
		for _, x := range r.Resources {
			if d.open(serverOf[x.URI]) {
				kept = append(kept, x)
			}
		}
		r.Resources = kept
	case *mcp.ListResourceTemplatesResult:
		if r == nil {
			break
		}
		serverOf := map[string]string{}
		for _, t := range b.res.Templates(resources.Filter{}) {
			if _, dup := serverOf[t.URITemplate]; !dup {
				serverOf[t.URITemplate] = t.Server
			}
		}
		d := doors(tools.KindResources)
		kept := make([]*mcp.ResourceTemplate, 0, len(r.ResourceTemplates))
		for _, x := range r.ResourceTemplates {
			if d.open(serverOf[x.URITemplate]) {
				kept = append(kept, x)
			}
		}
		r.ResourceTemplates = kept
	case *mcp.ListPromptsResult:
		if r == nil {
			break
		}
		d := doors(tools.KindPrompts)
		kept := make([]*mcp.Prompt, 0, len(r.Prompts))
		for _, x := range r.Prompts {
			if pr, found := b.lookupPrompt(x.Name); found && d.open(pr.Server) {
				kept = append(kept, x)
			}
		}
		r.Prompts = kept
	}
	return res, nil
}
