package mcpfold

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/services/tools"
)

// The meta-tools' model-facing text is constant: the folded prompt must not
// change when servers re-sync, or every request misses the prompt cache.
const (
	listDescription = "List the MCP tools reachable through mcp_call: a compact catalog grouped by server " +
		"(names and short descriptions, no schemas). Pass `tool` to get one tool's full input schema " +
		"before calling it, `server` to list one server, `query` to search names and descriptions " +
		"(10 best matches), `verbose` to include every schema."
	listSchema = `{"type":"object","properties":{` +
		`"tool":{"type":"string","description":"A full tool name from the catalog: returns its complete description and input schema"},` +
		`"server":{"type":"string","description":"Only this server's tools"},` +
		`"query":{"type":"string","description":"Words to search for in tool names and descriptions; returns the best matches, ranked"},` +
		`"verbose":{"type":"boolean","description":"Include every listed tool's input schema (large)"}` +
		`},"additionalProperties":false}`
	callDescription = "Call an MCP tool listed by mcp_list. `tool` is its full name; `arguments` must match " +
		"its input schema (get it with mcp_list {\"tool\": name})."
	callSchema = `{"type":"object","properties":{` +
		`"tool":{"type":"string","description":"The full tool name, as mcp_list shows it"},` +
		`"arguments":{"type":"object","description":"The tool's arguments, matching its input schema"}` +
		`},"required":["tool"],"additionalProperties":false}`
)

// searchLimit is how many ranked results mcp_list {query} returns.
const searchLimit = 10

// listArgs are mcp_list's parameters; a key of the wrong type is ignored.
type listArgs struct {
	tool, server, query string
	verbose             bool
}

func parseListArgs(raw json.RawMessage) listArgs {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return listArgs{}
	}
	var a listArgs
	str := func(k string) string {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
			return s
		}
		return ""
	}
	a.tool, a.server, a.query = str("tool"), str("server"), str("query")
	if v, ok := m["verbose"]; ok {
		_ = json.Unmarshal(v, &a.verbose)
	}
	return a
}

// Catalog is mcp_list's answer without `tool` or `query`.
type Catalog struct {
	Servers []CatalogServer `json:"servers"`
}

// CatalogServer is one server in a Catalog.
type CatalogServer struct {
	Server string        `json:"server"`
	Tools  []CatalogTool `json:"tools"`
}

// CatalogTool is one tool in a Catalog.
type CatalogTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Expansion is mcp_list's answer with `tool`.
type Expansion struct {
	Tool CatalogTool `json:"tool"`
}

// Search is mcp_list's answer with `query`.
type Search struct {
	Query  string      `json:"query"`
	Total  int         `json:"total"`
	Ranked []SearchHit `json:"ranked"`
	Note   string      `json:"note,omitempty"`
}

// SearchHit is one ranked tool.
type SearchHit struct {
	Name        string  `json:"name"`
	Server      string  `json:"server"`
	Description string  `json:"description"`
	Score       float64 `json:"score"`
}

// enableHint is the command that restores server.
func (a *adapter) enableHint(g *gateState, server string) string {
	return fmt.Sprintf("/mcp enable %d", g.idOf(server))
}

// list is mcp_list.
func (a *adapter) list(_ context.Context, call tools.Call) (tools.Output, error) {
	args := parseListArgs(call.Args)
	r := a.rules
	g := a.gate.Load()
	if args.tool != "" {
		return a.expand(call.Caller, args.tool, g)
	}

	all := a.mcpTools(call.Caller)
	visible := make([]tools.Definition, 0, len(all)) // whitelisted and enabled
	var disabledServers []string
	seenDisabled := map[string]bool{}
	for _, d := range all {
		s := r.serverOf(d)
		if !r.allowed(s) {
			continue
		}
		if g.disabled(s) {
			if !seenDisabled[s] {
				seenDisabled[s] = true
				disabledServers = append(disabledServers, s)
			}
			continue
		}
		if args.server != "" && s != args.server {
			continue
		}
		visible = append(visible, d)
	}
	if len(visible) == 0 {
		switch {
		case args.server != "" && seenDisabled[args.server]:
			return fail("server %q is disabled and hidden from the catalog — restore it with %q", args.server, a.enableHint(g, args.server))
		case args.server == "" && len(disabledServers) > 0:
			parts := make([]string, len(disabledServers))
			for i, s := range disabledServers {
				parts[i] = fmt.Sprintf("%q (%q)", s, a.enableHint(g, s))
			}
			return fail("every MCP tool under the %q prefix belongs to a disabled server — restore one with /mcp enable <id>: %s", r.prefix, strings.Join(parts, ", "))
		case args.server == "":
			return fail("no MCP tools are registered under the %q prefix", r.prefix)
		default:
			var servers []string
			for _, grp := range a.groups(all) {
				if r.allowed(grp.server) && !g.disabled(grp.server) {
					servers = append(servers, grp.server)
				}
			}
			return tools.Output{Value: errorValue{
				Error:      fmt.Sprintf("no MCP tools match server %q", args.server),
				DidYouMean: suggest(args.server, servers),
			}}, nil
		}
	}

	if args.query != "" {
		return tools.Output{Value: a.search(visible, args.query)}, nil
	}
	var cat Catalog
	for _, grp := range a.groups(visible) {
		cs := CatalogServer{Server: grp.server}
		for _, d := range grp.tools {
			ct := CatalogTool{Name: d.Name, Description: truncate(d.Description, r.limit)}
			if args.verbose {
				ct.Parameters = parameters(d)
			}
			cs.Tools = append(cs.Tools, ct)
		}
		cat.Servers = append(cat.Servers, cs)
	}
	return tools.Output{Value: cat}, nil
}

// expand is mcp_list {tool}.
func (a *adapter) expand(caller tools.Caller, name string, g *gateState) (tools.Output, error) {
	r := a.rules
	switch {
	case isMeta(name):
		return fail("refusing to expand %q: meta-tools are not expandable through mcp_list", name)
	case !r.isMCP(name):
		return fail("%q is not an MCP tool (expected the %q prefix) — call mcp_list without arguments for the catalog", name, r.prefix)
	}
	// The server's gates come before visibility, as they do for mcp_call.
	if reg, ok := a.reg.Get(name); ok {
		s := r.serverOf(reg)
		switch {
		case s == "":
			return fail("%q is not an MCP server's tool (no server declared it) — it stays in the prompt; call it directly", name)
		case !r.allowed(s):
			return fail("%q belongs to server %q, which is not in the configured servers list", name, s)
		case g.disabled(s):
			return fail("refusing to expand %q: server %q is disabled — it can be restored with %q", name, s, a.enableHint(g, s))
		}
	}
	if _, ok := a.reg.Lookup(caller, name); !ok {
		return tools.Output{Value: errorValue{
			Error:      fmt.Sprintf("unknown MCP tool %q — the server may have re-synced; call mcp_list to refresh", name),
			DidYouMean: suggest(name, a.dispatchable(caller, g)),
		}}, nil
	}
	// Lookup finds a tool the catalog leaves out (tools.Registry.OnHide):
	// one the policy holds shows no model its changed definition here.
	d, ok := a.reg.Offered(caller, name)
	if !ok {
		return fail("%q is withheld: not offered to you now (held by the policy until the user reviews a change to it, or denied by its rules); do not try to approve it yourself", name)
	}
	return tools.Output{Value: Expansion{Tool: CatalogTool{Name: d.Name, Description: d.Description, Parameters: parameters(d)}}}, nil
}

// search is mcp_list {query}.
func (a *adapter) search(defs []tools.Definition, query string) Search {
	docs := make([]searchDoc, len(defs))
	for i, d := range defs {
		docs[i] = a.docs.get(d.Name, strings.TrimPrefix(d.Name, a.rules.prefix), d.Description)
	}
	hits := rank(docs, query)
	out := Search{Query: query, Total: len(hits), Ranked: []SearchHit{}}
	for i, h := range hits {
		if i == searchLimit {
			break
		}
		d := defs[h.index]
		out.Ranked = append(out.Ranked, SearchHit{
			Name:        d.Name,
			Server:      a.rules.serverOf(d),
			Description: truncate(d.Description, a.rules.limit),
			Score:       math.Round(h.score*1000) / 1000,
		})
	}
	switch {
	case len(hits) == 0:
		out.Note = "no MCP tool matches the query — try other words, or call mcp_list without arguments for the whole catalog"
	case len(hits) > searchLimit:
		out.Note = fmt.Sprintf("showing the %d best of %d matches — refine the query to narrow them", searchLimit, len(hits))
	}
	return out
}

// dispatchable lists the tool names mcp_call would accept for caller.
func (a *adapter) dispatchable(caller tools.Caller, g *gateState) []string {
	var out []string
	for _, d := range a.mcpTools(caller) {
		s := a.rules.serverOf(d)
		if a.rules.allowed(s) && !g.disabled(s) {
			out = append(out, d.Name)
		}
	}
	return out
}

// call is mcp_call. The checks run in order: an object, a string tool,
// the prefix, not a meta-tool, a tool with a server (Origin.Server), a
// whitelisted server, an enabled server, a tool the caller can see (an
// unknown name answers with the closest names); then the arguments must
// match the tool's input schema (a mismatch answers with the errors and
// the schema, without a call). Every refusal and child failure is a
// failed output (tools.Output.Failed) whose text says what to do.
func (a *adapter) call(ctx context.Context, call tools.Call) (tools.Output, error) {
	r := a.rules
	var m map[string]json.RawMessage
	raw := bytes.TrimSpace(call.Args)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return fail(`mcp_call expects an object { "tool": string, "arguments"?: object }`)
	}
	var name string
	if v, ok := m["tool"]; !ok || json.Unmarshal(v, &name) != nil || name == "" {
		return fail(`mcp_call requires a string "tool" — discover names with mcp_list`)
	}
	g := a.gate.Load()
	if !r.isMCP(name) {
		return tools.Output{Value: errorValue{
			Error:      fmt.Sprintf("refusing to call %q: mcp_call dispatches only tools named with the %q prefix", name, r.prefix),
			DidYouMean: suggest(name, a.dispatchable(call.Caller, g)),
		}}, nil
	}
	if isMeta(name) {
		return fail("refusing to call %q: meta-tools are not dispatchable through mcp_call", name)
	}
	if reg, ok := a.reg.Get(name); ok {
		s := r.serverOf(reg)
		switch {
		case s == "":
			return fail("refusing to call %q: it is not an MCP server's tool (no server declared it) — it stays in the prompt; call it directly", name)
		case !r.allowed(s):
			return fail("refusing to call %q: server %q is not in the configured servers list", name, s)
		case g.disabled(s):
			return fail("refusing to call %q: server %q is disabled — ask the operator to run %q to restore it", name, s, a.enableHint(g, s))
		}
	}
	child, ok := a.reg.Lookup(call.Caller, name)
	if !ok {
		return tools.Output{Value: errorValue{
			Error:      fmt.Sprintf("tool %q is not registered or not visible in this scope — call mcp_list to see the catalog", name),
			DidYouMean: suggest(name, a.dispatchable(call.Caller, g)),
		}}, nil
	}

	args := json.RawMessage(`{}`)
	if v, ok := m["arguments"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		args = v
	}
	// The registry checks the arguments against the tool's input schema,
	// as on every other path; a mismatch answers with the schema to fix
	// them by.
	// The child's back-channels are the caller's: its progress, questions
	// and one-shot answer reach whoever called mcp_call.
	res := a.reg.Run(ctx, tools.Call{Caller: call.Caller, Name: name, Args: args, Channels: call.Channels})
	if res.Err != nil {
		if ctx.Err() != nil {
			// Cancellation stays a Go error so the registry reports the
			// call as aborted, exactly like a native call.
			return tools.Output{}, fmt.Errorf("MCP tool %q failed: %w", name, res.Err)
		}
		if errors.Is(res.Err, tools.ErrInvalidArguments) {
			return tools.Output{Value: errorValue{
				Error:       res.Err.Error() + " — fix them and call again",
				InputSchema: parameters(child),
			}}, nil
		}
		if errors.Is(res.Err, tools.ErrUnknownTool) {
			return fail("tool %q is not registered or not visible in this scope — call mcp_list to see the catalog", name)
		}
		return fail("MCP tool %q failed: %s", name, res.Err.Error())
	}
	return tools.Output{Value: res.Value, Content: res.Content, Failed: res.Failed}, nil
}

// docCache keeps each tool's search document while its description stays
// the same, so a query tokenizes only the query.
type docCache struct {
	mu sync.Mutex
	m  map[string]cachedDoc
}

type cachedDoc struct {
	description string
	doc         searchDoc
}

// forget drops name's entry, so that the cache holds only tools that are
// registered (servers add and remove tools for as long as the host runs).
func (c *docCache) forget(name string) {
	c.mu.Lock()
	delete(c.m, name)
	c.mu.Unlock()
}

func (c *docCache) get(name, shortName, description string) searchDoc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[name]; ok && e.description == description {
		return e.doc
	}
	d := newDoc(name, shortName, description)
	if c.m == nil {
		c.m = map[string]cachedDoc{}
	}
	c.m[name] = cachedDoc{description, d}
	return d
}
