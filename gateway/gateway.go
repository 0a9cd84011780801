// Package gateway serves a tool registry's assembled surface as an MCP
// server, so that any MCP client (Claude Code, Codex, VS Code, the MCP
// Inspector) reaches a composition's tools through one endpoint.
//
// tools/list is the registry's Assembly for the gateway's caller (folded or
// not, as the composition configures it), passed through byte for byte;
// tools/call runs the registry's whole Execute pipeline, so guards and hooks
// apply; images in a result travel as MCP image content read from the
// attachment store. When the assembly changes (a hot reload, an MCP server
// re-syncing its tools) the gateway updates the server's tool set by diff,
// and go-sdk sends notifications/tools/list_changed to connected clients.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

// DefaultDebounce is how long the gateway waits after the last registry
// change before it re-assembles: an MCP server re-syncing unregisters and
// registers its whole generation, and clients should see one change.
const DefaultDebounce = 50 * time.Millisecond

// maxImageBytes bounds what one image block may read from the store; the
// store admits far smaller images, so this only guards against a corrupt one.
const maxImageBytes = 64 << 20

// maxDebounceFactor bounds how many debounce delays a burst of changes may
// postpone a re-assembly.
const maxDebounceFactor = 20

// Options configures a Gateway. The zero value (or nil) means defaults.
type Options struct {
	// Implementation names the server to its clients (default "dsh-host").
	Implementation *mcp.Implementation
	// Logger receives the gateway's logs (default: discarded).
	Logger *slog.Logger
	// CallerID distinguishes this gateway among callers of kind "gateway"
	// in the registry's hooks and logs.
	CallerID string
	// Mask, when non-nil, limits the tools the gateway's clients see and may
	// call.
	Mask *tools.Mask
	// Debounce is the delay between a registry change and the re-assembly
	// (default DefaultDebounce).
	Debounce time.Duration
}

// Gateway is an MCP server that mirrors a tool registry. Create it with New,
// serve Server() on any go-sdk transport (or HTTPHandler), and Close it when
// done. It is safe for concurrent use.
type Gateway struct {
	server   *mcp.Server
	caller   tools.Caller
	logger   *slog.Logger
	debounce time.Duration

	// ctx bounds background re-assemblies; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex // guards the fields below
	reg         *tools.Registry
	store       *attachments.Store
	unsubscribe func()
	timer       *time.Timer
	// pendingSince is when the first change not yet assembled came; zero
	// when none is pending.
	pendingSince time.Time
	closed       bool

	bindMu sync.Mutex // serializes Rebind

	syncMu  sync.Mutex           // serializes syncs
	current map[string]toolState // what the server lists; guarded by syncMu

	// afterSync, when set (by tests), is called after every sync with the
	// number of tools added or replaced and removed.
	afterSync func(added, removed int, err error)
}

// toolState is what the gateway compares to decide whether a tool changed.
type toolState struct {
	description string
	schema      string
}

// New returns a gateway serving reg's assembly for the caller
// {Kind: "gateway", ImageInput: true}. store resolves image references in
// results; it may be nil, and images then reach clients as a text notice.
// New assembles once before returning, so the first client to connect sees
// the full surface; an assembly error is returned, and the gateway is not
// created.
func New(ctx context.Context, reg *tools.Registry, store *attachments.Store, opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "dsh-host", Title: "dsh-host gateway", Version: "dev"}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	g := &Gateway{
		store:    store,
		caller:   tools.Caller{Kind: "gateway", ID: o.CallerID, ImageInput: true, Mask: o.Mask},
		logger:   o.Logger,
		debounce: o.Debounce,
		current:  map[string]toolState{},
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	// Follow the registry before the first assembly, so that no change falls
	// between the two; a re-assembly it triggers waits for the lock until
	// the server exists.
	g.syncMu.Lock()
	g.bind(reg)
	a, err := g.assemble(ctx)
	if err != nil {
		g.syncMu.Unlock()
		g.Close()
		return nil, err
	}
	g.server = mcp.NewServer(o.Implementation, &mcp.ServerOptions{
		Logger:       g.sdkLogger(),
		Instructions: instructions(a.Sections),
		// Advertise tools with listChanged even while the surface is empty:
		// clients subscribe to the notification only when the capability is
		// there at connect, and a composition may gain tools later.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	g.apply(a.Tools)
	g.syncMu.Unlock()
	return g, nil
}

// instructions joins the assembly's prompt sections (such as each MCP
// server's instructions) into the server's instructions for its clients.
func instructions(sections []tools.Section) string {
	texts := make([]string, 0, len(sections))
	for _, s := range sections {
		if t := strings.TrimSpace(s.Text); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n\n")
}

// Server returns the MCP server; connect it to a transport with Run or
// Connect. Its tool set follows the registry until Close.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Rebind makes the gateway serve reg and read images from store instead of
// what it had (a reload may replace the services), and re-assembles if the
// registry changed. A nil reg empties the surface until the next Rebind.
func (g *Gateway) Rebind(reg *tools.Registry, store *attachments.Store) {
	g.bindMu.Lock()
	defer g.bindMu.Unlock()
	g.mu.Lock()
	g.store = store
	same := g.reg == reg
	g.mu.Unlock()
	if same {
		return
	}
	g.bind(reg)
	g.Refresh()
}

// Registry returns the registry the gateway currently serves.
func (g *Gateway) Registry() *tools.Registry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reg
}

func (g *Gateway) bind(reg *tools.Registry) {
	// Subscribe and unsubscribe outside g.mu: the registry may hold its own
	// lock while it calls handlers, which take g.mu in Refresh.
	var unsub func()
	if reg != nil {
		unsub = reg.OnChange(nil, func(tools.Change) { g.Refresh() })
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		if unsub != nil {
			unsub()
		}
		return
	}
	old := g.unsubscribe
	g.reg, g.unsubscribe = reg, unsub
	g.mu.Unlock()
	if old != nil {
		old()
	}
}

// Refresh schedules a re-assembly after the debounce delay; calls within the
// delay coalesce into one. Registry changes call it; call it too when
// something else may have changed the assembly (an assemble handler came or
// went without any tool doing so).
//
// A steady stream of changes postpones the re-assembly by at most
// maxDebounceFactor debounce delays from the first, so clients never wait
// indefinitely on a flapping server.
func (g *Gateway) Refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	now := time.Now()
	switch {
	case g.pendingSince.IsZero():
		g.pendingSince = now
		if g.timer == nil {
			g.timer = time.AfterFunc(g.debounce, g.fire)
		} else {
			g.timer.Reset(g.debounce)
		}
	case now.Sub(g.pendingSince)+g.debounce <= maxDebounceFactor*g.debounce:
		g.timer.Reset(g.debounce)
	}
}

func (g *Gateway) fire() {
	g.mu.Lock()
	g.pendingSince = time.Time{}
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.wg.Add(1)
	g.mu.Unlock()
	defer g.wg.Done()
	if err := g.Sync(g.ctx); err != nil && g.ctx.Err() == nil {
		g.logger.Error("gateway: tool surface not updated; clients keep the previous one", "err", err)
	}
}

// Sync assembles now and brings the server's tool set in line with the
// assembly: only tools whose name, description or schema bytes changed are
// added, replaced or removed, so an unchanged assembly sends clients nothing.
// On an assembly error the server keeps its tools.
//
// The server's instructions are the assembly's sections when the gateway
// was created: MCP has no notification for changed instructions.
func (g *Gateway) Sync(ctx context.Context) error {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	a, err := g.assemble(ctx)
	if err != nil {
		if g.afterSync != nil {
			g.afterSync(0, 0, err)
		}
		return err
	}
	g.apply(a.Tools)
	return nil
}

// assemble returns the registry's assembly for the gateway's caller, or an
// empty one without a registry.
func (g *Gateway) assemble(ctx context.Context) (tools.Assembly, error) {
	reg := g.Registry()
	if reg == nil {
		return tools.Assembly{Caller: g.caller}, nil
	}
	a, err := reg.Assemble(ctx, g.caller)
	if err != nil {
		return tools.Assembly{}, fmt.Errorf("gateway: assemble the tool surface: %w", err)
	}
	return a, nil
}

// apply makes want the server's tool set by diff. The caller holds syncMu.
func (g *Gateway) apply(want []tools.Schema) {
	next := make(map[string]toolState, len(want))
	var add []*mcp.Tool
	for _, s := range want {
		if _, dup := next[s.Name]; dup {
			g.logger.Warn("gateway: the assembly lists a tool twice; serving the first", "tool", s.Name)
			continue
		}
		schema, err := inputSchema(s.Parameters)
		if err != nil {
			g.logger.Warn("gateway: tool not served: its input schema is not an MCP object schema", "tool", s.Name, "err", err)
			continue
		}
		st := toolState{description: s.Description, schema: string(schema)}
		next[s.Name] = st
		if cur, ok := g.current[s.Name]; ok && cur == st {
			continue
		}
		add = append(add, &mcp.Tool{Name: s.Name, Description: s.Description, InputSchema: schema})
	}
	var remove []string
	for name := range g.current {
		if _, ok := next[name]; !ok {
			remove = append(remove, name)
		}
	}
	sort.Strings(remove)

	if len(remove) > 0 {
		g.server.RemoveTools(remove...)
	}
	for _, t := range add {
		if err := g.addTool(t); err != nil {
			g.logger.Warn("gateway: tool not served", "tool", t.Name, "err", err)
			delete(next, t.Name)
			if _, had := g.current[t.Name]; had {
				g.server.RemoveTools(t.Name)
				remove = append(remove, t.Name)
			}
		}
	}
	g.current = next
	if len(add) > 0 || len(remove) > 0 {
		g.logger.Info("gateway: tool surface changed", "tools", len(next), "added", len(add), "removed", len(remove))
	}
	if g.afterSync != nil {
		g.afterSync(len(add), len(remove), nil)
	}
}

// addTool registers t with go-sdk, turning its panics on schemas it refuses
// into an error: a schema comes from a third-party server and must not take
// the gateway down.
func (g *Gateway) addTool(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-sdk refused the tool: %v", r)
		}
	}()
	g.server.AddTool(t, g.callTool)
	return nil
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

// callTool runs one tools/call through the registry. The request's context
// carries the client's cancellation to the tool.
func (g *Gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	reg := g.Registry()
	if reg == nil {
		return nil, errors.New("gateway: no tool registry is running; check the host's status")
	}
	args, err := arguments(req.Params.Arguments)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	res := reg.Execute(ctx, g.caller, req.Params.Name, args)
	if res.Err != nil {
		if ctx.Err() != nil {
			// The client cancelled or went away: there is no one to tell.
			return nil, ctx.Err()
		}
		return errorResult(res.Err.Error()), nil
	}
	return &mcp.CallToolResult{Content: g.content(req.Params.Name, res.Content)}, nil
}

// arguments normalizes the call's arguments to a JSON object: MCP makes them
// optional, and the registry validates what a tool receives.
func arguments(a any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch v := a.(type) {
	case nil:
	case json.RawMessage:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`{}`), nil
	}
	return raw, nil
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// content maps model-facing content to MCP content: text stays text, an image
// reference becomes image content with the stored bytes. An image that cannot
// be read becomes a text notice in its place, so the rest of the result still
// reaches the client.
func (g *Gateway) content(tool string, in []tools.Content) []mcp.Content {
	out := make([]mcp.Content, 0, len(in))
	for _, c := range in {
		switch c.Type {
		case "text":
			out = append(out, &mcp.TextContent{Text: c.Text})
		case "image":
			img, err := g.image(c.Image)
			if err != nil {
				g.logger.Warn("gateway: image not delivered", "tool", tool, "err", err)
				out = append(out, &mcp.TextContent{Text: fmt.Sprintf("[image unavailable: %v]", err)})
				continue
			}
			out = append(out, img)
		default:
			out = append(out, &mcp.TextContent{Text: fmt.Sprintf("[unsupported content type: %s]", c.Type)})
		}
	}
	return out
}

func (g *Gateway) image(ref *attachments.Ref) (*mcp.ImageContent, error) {
	if ref == nil {
		return nil, errors.New("the image block has no attachment reference")
	}
	g.mu.Lock()
	store := g.store
	g.mu.Unlock()
	if store == nil {
		return nil, fmt.Errorf("no attachment store is running to read %s", ref.ID)
	}
	rc, stored, err := store.Open(ref.ID)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ref.ID, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref.ID, err)
	}
	if len(data) > maxImageBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", ref.ID, maxImageBytes)
	}
	mime := stored.MediaType
	if mime == "" {
		mime = ref.MediaType
	}
	return &mcp.ImageContent{Data: data, MIMEType: mime}, nil
}

// Close stops following the registry and waits for a re-assembly in flight.
// Sessions already connected stay open; close them (or cancel Run's
// context) to end them. Close is idempotent.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
	}
	unsub := g.unsubscribe
	g.unsubscribe = nil
	g.mu.Unlock()
	if unsub != nil {
		unsub()
	}
	g.cancel()
	g.wg.Wait()
	return nil
}

// sdkLogger is the logger handed to go-sdk: the gateway's, with go-sdk's
// routine records demoted to debug.
func (g *Gateway) sdkLogger() *slog.Logger { return slog.New(quietInfo{g.logger.Handler()}) }

// quietInfo demotes go-sdk's info records (every session connecting and
// disconnecting) to debug, so that the gateway's own log stays readable.
type quietInfo struct{ slog.Handler }

func (q quietInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, demote(l))
}

func (q quietInfo) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return q.Handler.Handle(ctx, r)
}

func (q quietInfo) WithAttrs(as []slog.Attr) slog.Handler { return quietInfo{q.Handler.WithAttrs(as)} }
func (q quietInfo) WithGroup(name string) slog.Handler    { return quietInfo{q.Handler.WithGroup(name)} }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
