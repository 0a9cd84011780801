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
		if r != nil {
			serverOf := firstServer(b.res.List(resources.Filter{}),
				func(x resources.Resource) (string, string) { return x.URI, x.Server })
			r.Resources = keepOpen(r.Resources, doors(tools.KindResources),
				func(x *mcp.Resource) string { return serverOf[x.URI] })
		}
	case *mcp.ListResourceTemplatesResult:
		if r != nil {
			serverOf := firstServer(b.res.Templates(resources.Filter{}),
				func(t resources.Template) (string, string) { return t.URITemplate, t.Server })
			r.ResourceTemplates = keepOpen(r.ResourceTemplates, doors(tools.KindResources),
				func(x *mcp.ResourceTemplate) string { return serverOf[x.URITemplate] })
		}
	case *mcp.ListPromptsResult:
		if r != nil {
			serverOf := func(x *mcp.Prompt) string {
				pr, _ := b.lookupPrompt(x.Name)
				return pr.Server // "" when no longer the service's: dropped
			}
			if b.g.raw { // lookupPrompt scans every prompt: one map per list instead
				m := firstServer(b.res.Prompts(),
					func(p resources.Prompt) (string, string) { return p.Name, p.Server })
				serverOf = func(x *mcp.Prompt) string { return m[x.Name] }
			}
			r.Prompts = keepOpen(r.Prompts, doors(tools.KindPrompts), serverOf)
		}
	}
	return res, nil
}

// firstServer maps each key of xs to the first server listing it, the one
// a read goes to.
func firstServer[T any](xs []T, keyServer func(T) (string, string)) map[string]string {
	out := make(map[string]string, len(xs))
	for _, x := range xs {
		k, server := keyServer(x)
		if _, dup := out[k]; !dup {
			out[k] = server
		}
	}
	return out
}

// keepOpen keeps the xs whose server the gate opens to d's caller.
func keepOpen[T any](xs []T, d *doorsOpen, serverOf func(T) string) []T {
	kept := make([]T, 0, len(xs))
	for _, x := range xs {
		if d.open(serverOf(x)) {
			kept = append(kept, x)
		}
	}
	return kept
}
