package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/schemafast"
)

// Options configures a Registry; nil means defaults.
type Options struct {
	// Logger receives panics recovered from tools and hooks, and other
	// events worth an operator's attention. Nil means slog.Default().
	Logger *slog.Logger
	// Tracer, when not nil, traces every Execute (a span per call).
	Tracer trace.Tracer
	// Metrics, when not nil, counts every Execute (calls, errors and
	// latency per server, tool and outcome) and the panics recovered.
	Metrics *Metrics
}

// Registry is the tool registry. The zero value is an empty registry that
// logs to slog.Default(); New sets options. Every method is safe for
// concurrent use.
type Registry struct {
	logger *slog.Logger
	// tracer and metrics are Options'; nil when off.
	tracer  trace.Tracer
	metrics *Metrics

	mu    sync.RWMutex
	tools map[string]*entry
	// staged holds the registrations of instances started beside the one
	// they replace, invisible until they go live (stage.go).
	staged map[*host.Scope][]*entry
	sorted []*entry // every entry by name; nil after a change, rebuilt lazily
	// servers counts the served tools by server, under mu: a server's
	// last tool going takes its metrics with it (forgetLocked).
	servers map[string]int

	hookMu sync.Mutex               // serializes hook set writers
	hooks  atomic.Pointer[hookSet]  // copy on write; nil means no hooks
	hiders atomic.Pointer[[]*hider] // OnHide's, copy on write under hookMu
	gaters atomic.Pointer[[]*gater] // OnGate's, copy on write under hookMu
	// stagedHooks holds, under hookMu, the hook additions of instances
	// started beside the one they replace (hooks.go's stageHook).
	stagedHooks map[*host.Scope][]func(*hookSet)

	changes   host.Event[Change]
	assembled host.Event[struct{}] // what Assemble returns may have changed
	assemble  host.Waterfall[Assembly]

	// Notice delivery: notices queue in the order they happened and one
	// goroutine at a time delivers them (see drain).
	evMu       sync.Mutex
	evQueue    []notice
	evDraining bool
	// announced counts the assembly changes queued so far (Changes).
	announced atomic.Uint64

	starting starting // instances whose tools are still coming (starting.go)
}

// notice is one queued delivery: a tool change (then an assembly change),
// or an assembly change alone.
type notice struct {
	change Change
	tool   bool // change is set
	// batched: more changes of the same step follow; the assembly
	// change is announced once, after the last.
	batched bool
}

// entry is one registration. Its identity (the pointer), not its name,
// is what unregister removes.
type entry struct {
	def    Definition
	scope  *host.Scope     // the registering instance's
	params json.RawMessage // InputSchema, or the empty object schema
	output *outputSchema   // nil without an OutputSchema; resolved once, at registration
	input  *inputSchema    // nil without an InputSchema; resolved at the first call
	// matched caches the hooks whose patterns match def.Name, for the hook
	// set it was computed from.
	matched atomic.Pointer[matchedHooks]
	// series are the tool's metrics, resolved at its first observed call.
	series atomic.Pointer[toolSeries]
}

// emptyParameters is the parameters schema of a tool registered without an
// InputSchema: an object with no properties.
const emptyParameters = `{"type":"object","properties":{}}`

// New returns an empty registry.
func New(opts *Options) *Registry {
	r := &Registry{}
	if opts != nil {
		r.logger = opts.Logger
		r.tracer, r.metrics = opts.Tracer, opts.Metrics
	}
	return r
}

func (r *Registry) log() *slog.Logger {
	if r.logger != nil {
		return r.logger
	}
	return slog.Default()
}

// Register adds def on behalf of the plugin instance whose scope is s: the
// tool goes away when s is disposed, and def.Origin.Instance is s's id
// (Server and RawName are the caller's). A nil s panics: a registration
// must belong to someone.
//
// A name outside ^[A-Za-z0-9_-]{1,64}$ (ErrInvalidName) or already taken
// (ErrDuplicateName, naming the holder) is an error, as is a definition
// without Execute, an InputSchema that is not a JSON object or an
// OutputSchema that does not resolve (ErrInvalidDefinition).
//
// The schemas are copied: the caller may reuse its buffers. unregister
// removes this registration earlier than dispose, and no other (not a
// later one under the same name); it is idempotent, safe to call from any
// goroutine, and leaves nothing behind on s.
func (r *Registry) Register(s *host.Scope, def Definition) (unregister func(), err error) {
	mustScope(s, "Register")
	def.Origin.Instance = s.ID()
	e, err := newEntry(def)
	if err != nil {
		return nil, err
	}
	e.scope = s
	if s.Retired() {
		// Replaced by a newer instance and finishing its calls (a re-sync
		// during the drain): what it registers now is not served.
		return func() {}, nil
	}
	r.mu.Lock()
	if s.Staged() {
		first, err := r.stageLocked(s, e)
		r.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if first {
			s.OnLive(func() { r.promote(s) })
		}
		return s.Effect("tool "+def.Name, func() { r.remove(e) }), nil
	}
	if held, dup := r.tools[def.Name]; dup {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %q is held by %s; unregister it first or choose another name",
			ErrDuplicateName, def.Name, holder(held.def.Origin))
	}
	if r.tools == nil {
		r.tools = make(map[string]*entry)
	}
	r.tools[def.Name] = e
	r.countLocked(e, 1)
	r.sorted = nil
	r.enqueue(notice{change: Change{Kind: Registered, Name: def.Name, Origin: def.Origin}, tool: true})
	r.mu.Unlock()
	r.drain()

	return s.Effect("tool "+def.Name, func() { r.remove(e) }), nil
}

// mustScope panics when a registration comes without its owner's scope: a
// programming error that would otherwise leak the registration.
func mustScope(s *host.Scope, what string) {
	if s == nil {
		panic("tools: " + what + " needs the registering plugin's *host.Scope, got nil (in a test, use host.NewScope)")
	}
}

func (r *Registry) remove(e *entry) {
	r.mu.Lock()
	if r.tools[e.def.Name] != e {
		r.unstageLocked(e)
		r.mu.Unlock()
		return
	}
	delete(r.tools, e.def.Name)
	r.countLocked(e, -1)
	r.forgetLocked(e)
	r.sorted = nil
	r.enqueue(notice{change: Change{Kind: Unregistered, Name: e.def.Name, Origin: e.def.Origin}, tool: true})
	r.mu.Unlock()
	r.drain()
}

// countLocked counts e, served or no longer, in its server's tools.
func (r *Registry) countLocked(e *entry, delta int) {
	server := e.def.Origin.Server
	if r.servers == nil {
		r.servers = map[string]int{}
	}
	if r.servers[server] += delta; r.servers[server] <= 0 {
		delete(r.servers, server)
	}
	if delta > 0 {
		r.metrics.back(server, e.def.Name)
	}
}

// forgetLocked notes that e is no longer served, unless a tool of its
// name and server is served in its place (a replaced instance's): a
// server or tool that went leaves no series behind (forget.go).
func (r *Registry) forgetLocked(e *entry) {
	server := e.def.Origin.Server
	if held := r.tools[e.def.Name]; held != nil && held.def.Origin.Server == server {
		return
	}
	r.metrics.left(server, e.def.Name, r.servers[server] == 0, e.series.Load())
}

func holder(o Origin) string {
	if o.Instance == "" {
		return "another registration (no instance recorded)"
	}
	s := fmt.Sprintf("instance %q", o.Instance)
	if o.Server != "" {
		s += fmt.Sprintf(" (MCP server %q, tool %q)", o.Server, o.RawName)
	}
	return s
}

func newEntry(def Definition) (*entry, error) {
	if err := CheckName(def.Name); err != nil {
		return nil, err
	}
	if def.Execute == nil {
		return nil, fmt.Errorf("%w %q: Execute is nil", ErrInvalidDefinition, def.Name)
	}
	e := &entry{def: def}
	if len(bytes.TrimSpace(def.InputSchema)) == 0 {
		e.def.InputSchema = nil
		e.params = json.RawMessage(emptyParameters)
	} else {
		if !isJSONObject(def.InputSchema) {
			return nil, fmt.Errorf("%w %q: InputSchema must be a JSON object schema", ErrInvalidDefinition, def.Name)
		}
		e.def.InputSchema = bytes.Clone(def.InputSchema)
		e.params = e.def.InputSchema
		e.input = &inputSchema{}
	}
	if len(bytes.TrimSpace(def.OutputSchema)) == 0 {
		e.def.OutputSchema = nil
	} else {
		e.def.OutputSchema = bytes.Clone(def.OutputSchema)
		rs, err := resolveSchema(e.def.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("%w %q: OutputSchema: %w", ErrInvalidDefinition, def.Name, err)
		}
		e.output = &outputSchema{resolved: rs, fast: schemafast.Compile(rs)}
	}
	return e, nil
}

// isJSONObject reports whether b is one valid JSON object.
func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}

func (r *Registry) lookup(name string) *entry {
	r.mu.RLock()
	e := r.tools[name]
	r.mu.RUnlock()
	return e
}

// Get returns the definition registered under name, whatever any caller's
// mask says. Its schemas are shared with the registry: do not modify them.
func (r *Registry) Get(name string) (Definition, bool) {
	if e := r.lookup(name); e != nil {
		return e.def, true
	}
	return Definition{}, false
}

// Lookup returns the definition registered under name when caller may see
// it (its Mask allows the name). It is Get for code that acts on behalf of a
// caller, such as a dispatcher that calls tools by name.
func (r *Registry) Lookup(caller Caller, name string) (Definition, bool) {
	if !caller.Mask.Allows(name) {
		return Definition{}, false
	}
	return r.Get(name)
}

// List returns the definitions offered to caller (its mask allows them
// and no HideFunc hides them), sorted by name.
func (r *Registry) List(caller Caller) []Definition {
	all := r.all()
	out := make([]Definition, 0, len(all))
	for _, e := range all {
		if r.offered(caller, e) {
			out = append(out, e.def)
		}
	}
	return out
}

// Names returns the registered names offered to caller, sorted.
func (r *Registry) Names(caller Caller) []string {
	all := r.all()
	out := make([]string, 0, len(all))
	for _, e := range all {
		if r.offered(caller, e) {
			out = append(out, e.def.Name)
		}
	}
	return out
}

// Len returns the number of registered tools.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.tools)
}

// all returns every entry sorted by name. The slice is shared and never
// modified after it is built; a change builds a new one.
func (r *Registry) all() []*entry {
	r.mu.RLock()
	s := r.sorted
	r.mu.RUnlock()
	if s != nil {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sorted == nil {
		s := make([]*entry, 0, len(r.tools))
		for _, e := range r.tools {
			s = append(s, e)
		}
		slices.SortFunc(s, func(a, b *entry) int { return strings.Compare(a.def.Name, b.def.Name) })
		r.sorted = s
	}
	return r.sorted
}

// OnChange follows registrations and unregistrations until s is disposed
// (or remove is called). Handlers run one at a time, in the order the
// changes happened, never under a registry lock; a change made by a handler
// (or concurrently by another goroutine) is delivered after the running
// handler returns, possibly on another goroutine. A panicking handler is
// logged and does not keep the others from the change. To start from the
// current set, call List after OnChange. A nil s panics.
//
// A delivery already running on another goroutine when the handler is
// removed may still call it once: waiting for that delivery instead would
// deadlock a handler that removes itself. Handlers tolerate a late call.
func (r *Registry) OnChange(s *host.Scope, fn func(Change)) (remove func()) {
	mustScope(s, "OnChange")
	off := r.changes.On(nil, func(c Change) {
		defer func() {
			if p := recover(); p != nil {
				r.log().Error("tool change handler panicked", "tool", c.Name, "change", c.Kind, "panic", p)
			}
		}()
		fn(c)
	})
	return s.Effect("tools change handler", off)
}

// OnAssemblyChange calls fn, until s is disposed (or remove is called),
// whenever what Assemble returns may have changed: a tool was registered
// or unregistered, an assemble handler was added or removed, or a plugin
// called AssemblyChanged. It is delivered like OnChange (one at a time, in
// order, never under a registry lock; a panic is logged), after the Change
// handlers of the same change. There is one call per change: a consumer
// that rebuilds something costly debounces on its own. A nil s panics.
func (r *Registry) OnAssemblyChange(s *host.Scope, fn func()) (remove func()) {
	mustScope(s, "OnAssemblyChange")
	off := r.assembled.On(nil, func(struct{}) {
		defer func() {
			if p := recover(); p != nil {
				r.log().Error("tool assembly change handler panicked", "panic", p)
			}
		}()
		fn()
	})
	return s.Effect("tools assembly change handler", off)
}

// AssemblyChanged announces to OnAssemblyChange handlers that Assemble's
// output changed for a reason the registry cannot see: an assemble
// handler whose output depends on its plugin's own state (a server
// disabled by a command) calls it when that state changes.
func (r *Registry) AssemblyChanged() {
	r.enqueue(notice{})
	r.drain()
}

// Changes counts the assembly changes so far: each one counted is, or
// will be, delivered to the OnAssemblyChange handlers. It counts a change
// as soon as it is made, before its delivery (which another goroutine may
// still be making), so that a consumer that keeps a copy of the assembly
// (the gateway) knows its copy is current when it was made from an
// Assemble that followed a Changes equal to the one now.
func (r *Registry) Changes() uint64 { return r.announced.Load() }

// enqueue records a notice; for a tool change the caller holds r.mu, so the
// queue has the order of the map's mutations.
func (r *Registry) enqueue(n notice) {
	if !n.batched {
		r.announced.Add(1)
	}
	r.evMu.Lock()
	r.evQueue = append(r.evQueue, n)
	r.evMu.Unlock()
}

// drain delivers queued notices unless another goroutine (or an outer frame
// of this one) already is; that one then delivers them.
func (r *Registry) drain() {
	r.evMu.Lock()
	if r.evDraining {
		r.evMu.Unlock()
		return
	}
	r.evDraining = true
	for len(r.evQueue) > 0 {
		n := r.evQueue[0]
		r.evQueue[0] = notice{}
		r.evQueue = r.evQueue[1:]
		r.evMu.Unlock()
		if n.tool {
			r.changes.Emit(n.change)
		}
		if !n.batched {
			r.assembled.Emit(struct{}{})
		}
		r.evMu.Lock()
	}
	r.evQueue = nil
	r.evDraining = false
	r.evMu.Unlock()
}
