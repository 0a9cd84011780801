package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/result"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Tool is what a registered tool's Execute needs.
type Tool struct {
	Raw    string // the server's name for it, what goes on the wire
	Public string // mcp__<server>__<raw>, as registered
	// Output validates structuredContent; nil when the tool advertises no
	// outputSchema or one that does not resolve. Resolved once per tool
	// generation, not per call.
	Output *result.OutputSchema
	// Hints are the tool's annotations as listed, nil for none: whether a
	// call that reached the server may be sent again depends on them.
	Hints *mcp.ToolAnnotations
}

// Options are a Set's collaborators.
type Options struct {
	// Server is the serverName, Label the instance's name in logs.
	Server, Label string
	Log           *slog.Logger
	// Registry and Scope are where the tools are registered, and whose
	// they are.
	Registry *tools.Registry
	Scope    *host.Scope
	// Include and Exclude are the config's tools.include / tools.exclude
	// globs over raw names.
	Include, Exclude []string
	// Execute and Render make a tool's Execute and Render.
	Execute func(*Tool) func(context.Context, tools.Call) (tools.Output, error)
	Render  func(raw string) func(any) []tools.Content
	// CatalogPath is the catalog cache file of this launch; "" keeps none.
	CatalogPath string
	// Pin is the config's pin mode, for the policy (tools.Origin.Pin).
	Pin string
}

// Set is one server's tools in the registry: the generation registered,
// what the server last listed, which of its tools require tasks, and the
// catalog cache. Swap, SwapLive, FromCatalog and Clear are the
// supervisor's (one goroutine); Listed and Tasks are safe for concurrent
// use.
type Set struct {
	opt Options

	generation []func() // unregisters each tool of the current generation
	signature  string
	// unofferedLogged: the tools already logged as not offered.
	unofferedLogged map[string]bool
	catalogBytes    []byte // what the cache file holds, as last read or written
	// protocol is the revision the cache remembers this launch needs
	// (catalog.ProtocolVersion), written with the next discovery.
	protocol string

	tasks Tasks

	mu sync.Mutex
	// listed are the raw names of the live server's last tool list; nil
	// before any discovery.
	listed map[string]bool
}

// New returns an empty Set.
func New(opt Options) *Set { return &Set{opt: opt} }

// Tasks follows which tools the server lists as requiring tasks.
func (s *Set) Tasks() *Tasks { return &s.tasks }

// Len is the number of tools registered.
func (s *Set) Len() int { return len(s.generation) }

// Listed reports whether the live server's last list holds raw (true
// before any list: a cached tool is taken on trust until then).
func (s *Set) Listed(raw string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed == nil || s.listed[raw]
}

// keep applies the include/exclude filter to a raw tool name.
func (s *Set) keep(raw string) bool {
	match := func(p string) bool { return tools.Match(p, raw) }
	if len(s.opt.Include) > 0 && !slices.ContainsFunc(s.opt.Include, match) {
		return false
	}
	return !slices.ContainsFunc(s.opt.Exclude, match)
}

// Swap replaces the registered generation with list. An unchanged list
// keeps the registered tools as they are. A registration failure (a
// foreign tool squatting on a name in this server's namespace) rolls the
// whole new generation back: no tools from this server, and a loud error.
func (s *Set) Swap(list []*mcp.Tool) error {
	kept := make([]*mcp.Tool, 0, len(list))
	for _, t := range list {
		if !s.keep(t.Name) {
			continue
		}
		if why := s.unoffered(t); why != "" {
			s.logUnoffered(t.Name, why)
			continue
		}
		kept = append(kept, t)
	}
	sig, err := json.Marshal(kept)
	if err != nil {
		sig = nil // never equal: always re-register
	}
	if sig != nil && s.signature != "" && string(sig) == s.signature {
		return nil
	}
	// One number for the whole list, unlike any other list's: the policy
	// trusts a new server's first list as one (tools.Origin.Listing).
	listID := rand.Uint64() | 1
	defs := make([]tools.Definition, len(kept))
	for i, t := range kept {
		defs[i] = s.definition(t, listID)
	}
	s.Clear()
	for _, def := range defs {
		unregister, err := s.opt.Registry.Register(s.opt.Scope, def)
		if err != nil {
			s.Clear()
			err = fmt.Errorf("%s: tool registration failed, no tools registered: %w", s.opt.Label, err)
			s.opt.Log.Error(err.Error())
			return err
		}
		s.generation = append(s.generation, unregister)
	}
	s.signature = string(sig)
	return nil
}

// Clear removes the current generation.
func (s *Set) Clear() {
	for i := len(s.generation) - 1; i >= 0; i-- {
		s.generation[i]()
	}
	s.generation = nil
	s.signature = ""
}

func (s *Set) definition(t *mcp.Tool, listID uint64) tools.Definition {
	info := &Tool{Raw: t.Name, Public: PublicName(s.opt.Server, t.Name), Hints: t.Annotations}
	var input json.RawMessage
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			input = b
		}
	}
	if t.OutputSchema != nil {
		rs, err := resolveOutputSchema(t.OutputSchema)
		if err != nil {
			s.opt.Log.Debug(s.opt.Label+": outputSchema not enforced: it does not resolve", "tool", t.Name, "err", err)
		}
		info.Output = result.NewOutputSchema(rs)
	}
	return tools.Definition{
		Name:        info.Public,
		Description: t.Description,
		InputSchema: input,
		Execute:     s.opt.Execute(info),
		Render:      s.opt.Render(info.Raw),
		Origin:      tools.Origin{Server: s.opt.Server, RawName: t.Name, Pin: s.opt.Pin, Listing: listID},
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
	var sch jsonschema.Schema
	if err := json.Unmarshal(b, &sch); err != nil {
		return nil, err
	}
	return sch.Resolve(nil)
}

// FromCatalog registers the tools of the catalog cache, as a live
// discovery with the same list would, and returns the instructions it
// holds; ok is false when there is no usable cache (a file that does not
// read is logged and ignored: the next discovery rewrites it).
func (s *Set) FromCatalog() (instructions string, ok bool) {
	if s.opt.CatalogPath == "" {
		return "", false
	}
	cat, b, err := readCatalog(s.opt.CatalogPath)
	if err != nil {
		if !errors.Is(err, errNoCatalog) {
			s.opt.Log.Warn(s.opt.Label+": catalog cache ignored; the next discovery rewrites it", "err", err)
		}
		return "", false
	}
	s.catalogBytes = b
	s.protocol = cat.ProtocolVersion
	s.tasks.set(cat.TaskRequired)
	_ = s.Swap(cat.Tools) // a failure is logged, and leaves no tools
	return cat.Instructions, true
}

// Protocol is the revision the catalog cache remembers this launch needs,
// "" for none. FromCatalog reads it; without FromCatalog (a server whose
// start may not use the cache) ReadProtocol does.
func (s *Set) Protocol() string { return s.protocol }

// ReadProtocol reads the revision the catalog cache remembers, without
// registering its tools.
func (s *Set) ReadProtocol() string {
	if s.opt.CatalogPath == "" {
		return ""
	}
	if cat, _, err := readCatalog(s.opt.CatalogPath); err == nil {
		s.protocol = cat.ProtocolVersion
	}
	return s.protocol
}

// SetProtocol remembers that this launch needs revision v; the next
// discovery (SwapLive) writes it to the catalog cache.
func (s *Set) SetProtocol(v string) { s.protocol = v }

// SwapLive registers a live server's list (Swap) and rewrites the catalog
// cache, with the server's instructions, when it changed.
func (s *Set) SwapLive(list []*mcp.Tool, instructions string) error {
	listed := make(map[string]bool, len(list))
	for _, t := range list {
		listed[t.Name] = true
	}
	s.mu.Lock()
	s.listed = listed
	s.mu.Unlock()
	if err := s.Swap(list); err != nil {
		return err
	}
	if s.opt.CatalogPath == "" {
		return nil
	}
	b, err := encodeCatalog(s.opt.Server, list, s.tasks.names(), instructions, s.protocol)
	if err != nil {
		s.opt.Log.Warn(s.opt.Label+": catalog cache not written", "err", err)
		return nil
	}
	if slices.Equal(b, s.catalogBytes) {
		return nil
	}
	if err := writeCatalog(s.opt.CatalogPath, b); err != nil {
		s.opt.Log.Warn(s.opt.Label+": catalog cache not written", "err", err)
		return nil
	}
	s.catalogBytes = b
	return nil
}

// List drains tools/list pagination. A tool listed twice makes the list
// invalid, and so does a cursor the server already returned (it would loop
// forever).
func List(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var list []*mcp.Tool
	seen := map[string]bool{}
	cursors := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
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
