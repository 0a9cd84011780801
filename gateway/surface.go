package gateway

// The tools the gateway serves: the assembly's (or, raw, the MCP
// servers' own), named, checked, and kept in line with the server by the
// reconciler.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/reconcile"
	"github.com/dsh-host/dsh-host/services/tools"
)

// toolState is what the gateway compares to decide whether a tool changed.
type toolState struct {
	public      string // the registry's name, which a call executes
	description string
	schema      string
	meta        string // the MCP server's listing (Definition.MCPTool)
}

// apply makes a's tools the server's tool set by diff, and its sections the
// instructions, and returns how many tools it added or replaced and
// removed. The caller holds syncMu.
func (g *Gateway) apply(a tools.Assembly) (added, removed int) {
	text := instructions(a.Sections)
	g.instructions.Store(&text)
	surface := g.surface(a)
	want := make([]reconcile.Entry[toolState, *mcp.Tool], 0, len(surface))
	for _, s := range surface {
		schema, err := inputSchema(s.Parameters)
		if err != nil {
			g.logger.Warn("gateway: tool not served: its input schema is not an MCP object schema", "tool", s.name, "err", err)
			continue
		}
		st := toolState{public: s.Name, description: s.Description, schema: string(schema), meta: string(s.meta)}
		t, err := mcpTool(s.name, st)
		if err != nil {
			g.logger.Warn("gateway: tool not served: its MCP listing does not decode", "tool", s.name, "err", err)
			continue
		}
		want = append(want, reconcile.Entry[toolState, *mcp.Tool]{Key: s.name, State: st, Value: t})
	}
	r := g.tools.Sync(want)
	served := g.tools.Served()
	g.storeServed(served)
	if r.Changed() || g.lists.sig(listTools) == "" {
		g.lists.setSig(listTools, toolsSignature(served))
	}
	if r.Changed() {
		g.logger.Info("gateway: tool surface changed", "tools", len(served), "added", r.Added, "removed", r.Removed)
	}
	return r.Added, r.Removed
}

// toolSet is the served tools' reconciler.
func (g *Gateway) toolSet() *reconcile.Set[toolState, *mcp.Tool] {
	return reconcile.New(reconcile.Ops[toolState, *mcp.Tool]{
		Changing: func() { g.lists.changing(listTools) },
		Remove:   func(names ...string) { g.server.RemoveTools(names...) },
		Add: func(e reconcile.Entry[toolState, *mcp.Tool]) error {
			err := g.addTool(e.Value, e.State.public)
			if err != nil {
				g.logger.Warn("gateway: tool not served", "tool", e.Key, "err", err)
			}
			return err
		},
		Duplicate: func(e reconcile.Entry[toolState, *mcp.Tool]) {
			g.logger.Warn("gateway: the surface lists a tool twice; serving the first", "tool", e.Key)
		},
	})
}

// toolsSignature is the identity of the served tools (sessions.go).
func toolsSignature(served map[string]toolState) string {
	entries := make(map[string]string, len(served))
	for name, st := range served {
		entries[name] = strings.Join([]string{st.public, st.description, st.schema, st.meta}, "\x00")
	}
	return signature(entries)
}

// addTool registers t with go-sdk, turning its panics on schemas it refuses
// into an error: a schema comes from a third-party server and must not take
// the gateway down.
func (g *Gateway) addTool(t *mcp.Tool, public string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-sdk refused the tool: %v", r)
		}
	}()
	g.server.AddTool(t, g.forwarding(func(ctx context.Context, req *mcp.CallToolRequest, ch *tools.Channels) (*mcp.CallToolResult, error) {
		return g.callTool(ctx, public, req, ch)
	}))
	return nil
}

// servedTool is one tool of the gateway's surface: the assembly's schema,
// the name clients call it by, and the MCP server's listing of it.
type servedTool struct {
	tools.Schema
	name string
	meta json.RawMessage
}

// surface is the tools the gateway serves: the assembly's, with the MCP
// server's listing of each; in raw mode, every MCP server's tool the
// caller may see, under its raw name, whatever the assembly folds.
func (g *Gateway) surface(a tools.Assembly) []servedTool {
	if g.raw {
		defs := g.reg.List(g.surfaceCaller)
		out := make([]servedTool, 0, len(defs))
		for _, d := range defs {
			if d.Origin.Server == "" || d.Origin.RawName == "" {
				continue
			}
			out = append(out, servedTool{
				Schema: tools.Schema{Name: d.Name, Description: d.Description, Parameters: d.InputSchema},
				name:   d.Origin.RawName,
				meta:   d.MCPTool,
			})
		}
		return out
	}
	out := make([]servedTool, len(a.Tools))
	for i, s := range a.Tools {
		out[i] = servedTool{Schema: s, name: g.names.fit(s.Name, tools.Origin{})}
		if d, ok := g.reg.Lookup(g.surfaceCaller, s.Name); ok {
			out[i].name = g.names.fit(s.Name, d.Origin)
			out[i].meta = d.MCPTool
			if d.MCPTool == nil && d.Annotations != nil {
				out[i].meta, _ = json.Marshal(&mcp.Tool{Annotations: d.Annotations}) // a struct: cannot fail
			}
		}
	}
	return out
}

// DefaultNameLimit is the longest tool name a gateway serves unless told
// otherwise: with Claude Code's prefix mcp__<name>__ for a server name of
// up to 9 characters (mcp__dsh__ is 10), a name stays within the 64 that
// model APIs accept.
const DefaultNameLimit = 48

// MinNameLimit is the smallest name limit: room for a 12-digit hash and a
// readable start.
const MinNameLimit = 24

// naming is how the gateway names the tools it serves.
type naming struct {
	limit      int
	dropMarker bool
}

// fit is the name the registry's tool name, of origin, is served under:
// an MCP server's tool as mcp__<server>__<tool> (<server>__<tool> with
// dropMarker), fitted to the limit by shortening the server part before
// the tool's own name (tools.FitToolName); any other under its own name,
// fitted. It depends on nothing else, so a name never changes with what
// else is served.
func (n naming) fit(name string, origin tools.Origin) string {
	if origin.Server == "" || origin.RawName == "" {
		return tools.FitName(name, n.limit, name)
	}
	marker := "mcp__"
	if n.dropMarker {
		marker = ""
	}
	return tools.FitToolName(marker, origin.Server, origin.RawName, n.limit)
}

// mcpTool is the tool clients list: the MCP server's listing as it came
// (title, annotations, outputSchema, icons, _meta...) under the served
// name, with the assembly's description and input schema.
func mcpTool(name string, st toolState) (*mcp.Tool, error) {
	t := &mcp.Tool{}
	if st.meta != "" {
		if err := json.Unmarshal([]byte(st.meta), t); err != nil {
			return nil, err
		}
	}
	t.Name, t.Description, t.InputSchema = name, st.description, json.RawMessage(st.schema)
	return t, nil
}

// inputSchema returns the raw schema to serve. MCP requires an object schema
// with "type": "object"; a schema that is absent, or an object schema that
// only omits the type (tool arguments are always an object), gets the type
// added; any other schema is refused. Otherwise the bytes pass through.
func inputSchema(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	switch typ, ok := m["type"]; {
	case !ok:
		m["type"] = "object"
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return b, nil
	case typ == "object":
		return json.RawMessage(trimmed), nil
	default:
		return nil, fmt.Errorf(`"type" is %v, not "object"`, typ)
	}
}
