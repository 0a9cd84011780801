package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/result"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// listTools drains tools/list pagination. A tool listed twice makes the
// list invalid, and so does a cursor the server already returned (it would
// loop forever).
func listTools(ctx context.Context, s *mcp.ClientSession) ([]*mcp.Tool, error) {
	var list []*mcp.Tool
	seen := map[string]bool{}
	cursors := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for {
		res, err := s.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		for _, t := range res.Tools {
			if seen[t.Name] {
				return nil, fmt.Errorf("server listed tool %q more than once — invalid tool list", t.Name)
			}
			seen[t.Name] = true
			list = append(list, t)
		}
		if res.NextCursor == "" {
			return list, nil
		}
		if cursors[res.NextCursor] {
			return nil, fmt.Errorf("server repeated the tools/list cursor %q — invalid tool list", res.NextCursor)
		}
		cursors[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// keep applies the include/exclude filter to a raw tool name.
func (f *ToolFilter) keep(raw string) bool {
	if len(f.Include) > 0 && !slices.ContainsFunc(f.Include, func(p string) bool { return tools.Match(p, raw) }) {
		return false
	}
	return !slices.ContainsFunc(f.Exclude, func(p string) bool { return tools.Match(p, raw) })
}

// swap replaces the registered generation with list. An unchanged list
// keeps the registered tools as they are. A registration failure (a
// foreign tool squatting on a name in this server's namespace) rolls the
// whole new generation back: no tools from this server, and a loud error.
func (c *client) swap(list []*mcp.Tool) error {
	kept := make([]*mcp.Tool, 0, len(list))
	for _, t := range list {
		if !c.cfg.Tools.keep(t.Name) {
			continue
		}
		if why := c.unoffered(t); why != "" {
			c.logUnoffered(t.Name, why)
			continue
		}
		kept = append(kept, t)
	}
	sig, err := json.Marshal(kept)
	if err != nil {
		sig = nil // never equal: always re-register
	}
	if sig != nil && c.signature != "" && string(sig) == c.signature {
		return nil
	}
	defs := make([]tools.Definition, len(kept))
	for i, t := range kept {
		defs[i] = c.definition(t)
	}
	c.unregisterAll()
	for _, def := range defs {
		unregister, err := c.opt.registry.Register(c.opt.scope, def)
		if err != nil {
			c.unregisterAll()
			err = fmt.Errorf("%s: tool registration failed, no tools registered: %w", c.label, err)
			c.log.Error(err.Error())
			return err
		}
		c.generation = append(c.generation, unregister)
	}
	c.signature = string(sig)
	return nil
}

// unregisterAll removes the current generation.
func (c *client) unregisterAll() {
	for i := len(c.generation) - 1; i >= 0; i-- {
		c.generation[i]()
	}
	c.generation = nil
	c.signature = ""
}

// toolInfo is what a registered tool's Execute needs.
type toolInfo struct {
	raw    string
	public string
	// output validates structuredContent; nil when the tool advertises no
	// outputSchema or one that does not resolve. Resolved once per tool
	// generation, not per call.
	output *result.OutputSchema
}

func (c *client) definition(t *mcp.Tool) tools.Definition {
	info := &toolInfo{raw: t.Name, public: PublicToolName(c.cfg.ServerName, t.Name)}
	var input json.RawMessage
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			input = b
		}
	}
	if t.OutputSchema != nil {
		rs, err := resolveOutputSchema(t.OutputSchema)
		if err != nil {
			c.log.Debug(c.label+": outputSchema not enforced: it does not resolve", "tool", t.Name, "err", err)
		}
		info.output = result.NewOutputSchema(rs)
	}
	return tools.Definition{
		Name:        info.public,
		Description: t.Description,
		InputSchema: input,
		Execute:     c.executor(info),
		Render:      c.proj.Render(info.raw),
		Origin:      tools.Origin{Server: c.cfg.ServerName, RawName: t.Name},
		MCPTool:     listing(t),
	}
}

// resolveOutputSchema prepares a tool's advertised outputSchema for
// validation with the full JSON Schema vocabulary jsonschema-go supports.
func resolveOutputSchema(schema any) (*jsonschema.Resolved, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// capInstructions returns the server's instructions, cut to
// maxInstructionBytes with a marker.
func (c *client) capInstructions(res *mcp.InitializeResult) string {
	if res == nil || res.Instructions == "" {
		return ""
	}
	text := res.Instructions
	if len(text) <= maxInstructionBytes {
		return text
	}
	cut := maxInstructionBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	c.log.Warn(c.label+": server instructions exceed 32 KiB; the rest is dropped", "bytes", len(text))
	return text[:cut] + fmt.Sprintf("\n[instructions truncated: %d more bytes dropped]", len(text)-cut)
}

// assemble adds the server's instructions to the model's prompt as the
// section "mcp:<serverName>".
func (c *client) assemble(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
	c.mu.Lock()
	text := c.instructions
	c.mu.Unlock()
	if text != "" {
		a.Sections = append(slices.Clip(a.Sections), tools.Section{
			Name: "mcp:" + c.cfg.ServerName,
			Text: "### MCP server: " + c.cfg.ServerName + "\n\n" + text,
		})
	}
	if next == nil {
		return a, nil
	}
	return next(ctx, a)
}
