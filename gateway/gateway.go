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
// and go-sdk sends notifications/tools/list_changed to the connected
// clients that need it: past their handshake, and listing something else
// than they last did (sessions.go). Names are fitted to a budget for
// clients that prefix them (Options.NameLimit, DropMarker).
//
// Nothing a client would see from the server itself is lost on the way:
// every failure is isError with its explanation (a tools.Result's Err, or
// a tool's own failed answer, Result.Failed, as mcp_call's refusals); a
// listing keeps the server's title, annotations, outputSchema, icons and
// _meta (Definition.MCPTool); a relayed MCP result (tools.MCPResult)
// keeps every content block and its structuredContent; the tool's
// progress and its server's log messages reach the client
// (tools.Channels' Progress and Log). With Options.Raw the MCP servers' tools are served under
// their own names, unfolded; HTTPOptions.Stateless serves stateless
// Streamable HTTP.
//
// Besides tools it serves what the resources service gathers from every
// server: resources, templates, subscriptions, prompts (named like tools)
// and completion (resources.go, prompts.go); and a server's elicitation or
// sampling request made during a client's call is passed on to that client
// in the style its protocol revision speaks (forward.go). While the
// composition starts, lists wait (bounded by Options.ListWait) for the
// servers starting with it, and Readiness says when the served surface is
// complete (ready.go).
//
// The package registers the `gateway` plugin: an instance injects the tool
// registry (and the attachment store, if any), serves Streamable HTTP when
// its config names an address, and provides the running Gateway (Key) to a
// front end that serves a session of its own (dsh-host serve --stdio).
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
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/debounce"
	"github.com/dsh-host/dsh-host/internal/version"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/resources"
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
	// Implementation names the server to its clients (default "dsh-host"
	// at the binary's module version).
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
	// Raw serves the MCP servers' tools under their own names (Origin.RawName)
	// instead of the assembly: no prefix, no folding, and no tool that is not
	// an MCP server's. With one server, the gateway is a faithful bridge to
	// it; of two tools with one raw name, the first registered is served.
	Raw bool
	// Resources, when non-nil, is the resources service whose resources,
	// templates, prompts and completion the gateway serves too
	// (resources.go, prompts.go).
	Resources *resources.Registry
	// NameLimit is the longest tool name served (0: DefaultNameLimit); a
	// longer one is fitted to it, stable and distinct (tools.FitName).
	// Clients add their own prefix (mcp__<server>__ for Claude Code) to
	// names that model APIs cap at 64 characters.
	NameLimit int
	// DropMarker serves an MCP server's tools without the mcp__ marker
	// (<serverName>__<tool>): a client adds its own.
	DropMarker bool
	// MaxCallsPerSession and MaxCalls cap the requests in flight per
	// session and over all sessions (defaults DefaultMaxCallsPerSession
	// and DefaultMaxCalls); a request past a cap fails with an error
	// naming it.
	MaxCallsPerSession, MaxCalls int
	// DrainTimeout is how long a drain may wait for the requests in
	// flight (default DefaultDrainTimeout); see Gateway.Drain.
	DrainTimeout time.Duration
	// Tracer, when not nil, traces every MCP request (a server span,
	// continuing the client's trace context from params._meta).
	Tracer trace.Tracer
	// Metrics, when not nil, reports the gateway's sessions, connections
	// and requests in flight, and counts the panics recovered.
	Metrics *Metrics
	// PerIdentity serves each request's identity (inbound OAuth) its own
	// tools: the surface holds what any identity may see, and each
	// tools/list is narrowed to its caller's (identity.go).
	PerIdentity bool
	// ListWait bounds how long after the gateway's start its lists wait
	// for the servers starting with it (default DefaultListWait; ready.go).
	ListWait time.Duration
}

// Gateway is an MCP server that mirrors a tool registry for the life of a
// scope. Create it with New and serve Server() on any go-sdk transport (or
// HTTPHandler). It is safe for concurrent use.
type Gateway struct {
	server *mcp.Server
	reg    *tools.Registry
	store  *attachments.Store
	caller tools.Caller
	// surfaceCaller is whom the surface is assembled for: caller, or,
	// with PerIdentity, caller standing for every identity.
	surfaceCaller tools.Caller
	perIdentity   bool
	logger        *slog.Logger
	raw           bool
	names         naming
	// logLevels says which clients asked for log messages (loglevel.go).
	logLevels logLevels

	// ctx bounds background re-assemblies; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// stopping ends every request in flight with an error saying the
	// gateway is stopping: a drain cut (stop) or Close.
	stopping context.Context
	stop     context.CancelFunc
	refresh  *debounce.Debouncer
	// stale is set by refreshSoon and cleared by the sync that follows: a
	// request whose answer depends on the surface syncs first while it is
	// set, or while the registry has changes the surface lacks (behind),
	// so it never sees a change the registry already made.
	stale atomic.Bool
	// startup: the lists' wait for the servers starting, and readiness
	// (ready.go).
	startup startup
	// instructions are the last assembly's sections, for the next client
	// to initialize.
	instructions atomic.Pointer[string]
	// undelivered counts the notifications go-sdk could not deliver (a
	// session without a GET stream): one change with many such sessions
	// open is one log line, not one per session.
	undelivered *tally
	// uninitialized counts go-sdk's errors about a client's requests out
	// of order (a request before initialize), which any client can cause
	// without a token: one log line per interval, not one per request.
	uninitialized *tally
	// calls caps the requests in flight (calls.go).
	calls *callLimit
	// draining is set by Drain: /readyz fails, and new sessions and
	// requests are refused.
	draining atomic.Bool
	// posts counts the HTTP requests in flight other than event streams
	// (a call's answer is written after its call has left calls).
	posts inFlight
	// onDrain, set by the HTTP listener, stops its keep-alives when a
	// drain starts, so that a load balancer's connections move on.
	onDrain func()
	// drainTimeout bounds a drain (Options.DrainTimeout).
	drainTimeout time.Duration

	closeOnce sync.Once
	done      chan struct{} // closed by Close

	syncMu  sync.Mutex           // serializes syncs
	current map[string]toolState // what the server lists; guarded by syncMu

	// afterSync, when set (by tests), is called after every sync with the
	// number of tools added or replaced and removed.
	afterSync func(added, removed int, err error)

	// bridge serves resources, prompts and completion; trips holds the
	// calls waiting for a client's answer (forward.go).
	bridge *bridge
	trips  roundTrips

	// lists follows what each session listed, for its list_changed
	// notifications (sessions.go); send is go-sdk's sending handler.
	lists sessionLists
	send  mcp.MethodHandler
	// metrics are the host's (nil: off), for the listener's gauges.
	metrics *Metrics
	// problem is what is wrong with the composition, for clients
	// (SetProblem); "" or nil when nothing is.
	problem atomic.Pointer[string]
	// served maps each served tool name to the registry's (identity.go).
	served atomic.Pointer[map[string]string]
	// answers is the HTTP listener's answer budget (answers.go), for its
	// gauge; nil without one.
	answers atomic.Pointer[answerBudget]
	// idLimits are the HTTP listener's limits per identity, nil without
	// inbound OAuth (limits_identity.go).
	idLimits atomic.Pointer[identityLimits]
}

// toolState is what the gateway compares to decide whether a tool changed.
type toolState struct {
	public      string // the registry's name, which a call executes
	description string
	schema      string
	meta        string // the MCP server's listing (Definition.MCPTool)
}

// New returns a gateway serving reg's assembly for the caller
// {Kind: "gateway", ImageInput: true}, for as long as s lives: it follows
// reg (OnAssemblyChange) and is closed when s is disposed. store resolves
// image references in results; it may be nil, and images then reach
// clients as a text notice. New assembles once before returning, so the
// first client to connect sees the surface; an assembly error is returned,
// and the gateway is not created.
func New(s *host.Scope, reg *tools.Registry, store *attachments.Store, opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "dsh-host", Title: "dsh-host gateway", Version: version.String()}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.MaxCallsPerSession <= 0 {
		o.MaxCallsPerSession = DefaultMaxCallsPerSession
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.NameLimit <= 0 {
		o.NameLimit = DefaultNameLimit
	}
	g := &Gateway{
		names:   naming{limit: o.NameLimit, dropMarker: o.DropMarker},
		reg:     reg,
		store:   store,
		caller:  tools.Caller{Kind: tools.CallerGateway, ID: o.CallerID, ImageInput: true, PassThrough: true, Mask: o.Mask},
		logger:  o.Logger,
		raw:     o.Raw,
		done:    make(chan struct{}),
		current: map[string]toolState{},
	}
	g.surfaceCaller, g.perIdentity = g.caller, o.PerIdentity
	g.startup.init(s, o.ListWait)
	if o.PerIdentity {
		g.surfaceCaller.Identity = &tools.Identity{Any: true}
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.stopping, g.stop = context.WithCancel(g.ctx)
	g.trips.onPanic = g.panicError
	g.metrics = o.Metrics
	g.undelivered = newTally(tallyInterval, func(n int) {
		g.logger.Info("gateway: notifications found no open event stream; those clients see the change at their next request", "undelivered", n)
	})
	g.uninitialized = newTally(tallyInterval, func(n int) {
		g.logger.Warn("gateway: refused requests sent out of order, most of them before initialize (a POST without Mcp-Session-Id must be an initialize)", "refused", n)
	})
	g.drainTimeout = o.DrainTimeout
	if g.drainTimeout <= 0 {
		g.drainTimeout = DefaultDrainTimeout
	}
	g.calls = &callLimit{perSession: o.MaxCallsPerSession, total: o.MaxCalls, bySession: map[mcp.Session]int{},
		refused: g.refusalTally("requests", "maxCallsPerSession or maxCalls")}
	g.refresh = debounce.New(o.Debounce, maxDebounceFactor*o.Debounce, g.fire)
	// Follow the registry before the first assembly, so that no change falls
	// between the two; a re-assembly it triggers waits for the lock until
	// the server exists. Close is registered after, so it runs first at
	// dispose and a change arriving meanwhile finds the gateway closed.
	// (Outside the lock: on a disposed scope it runs at once, and waits for
	// a re-assembly that waits for the lock.)
	g.syncMu.Lock()
	unsubscribe := reg.OnAssemblyChange(s, g.refreshSoon)
	g.startup.synced.Store(reg.Changes())
	a, err := g.assemble(s.Context())
	if err != nil {
		g.cancel() // a re-assembly waiting for the lock finds the gateway closed
		g.syncMu.Unlock()
		unsubscribe()
		g.Close()
		return nil, err
	}
	sopts := &mcp.ServerOptions{
		Logger: g.sdkLogger(),
		// Advertise tools with listChanged even while the surface is empty:
		// clients subscribe to the notification only when the capability is
		// there at connect, and a composition may gain tools later.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true},
			// The MCP servers' log messages during a call are relayed.
			Logging: &mcp.LoggingCapabilities{}},
	}
	g.bridge = newBridge(g, s, o.Resources, sopts)
	g.server = mcp.NewServer(o.Implementation, sopts)
	// The cap comes first: a refused request costs no sync.
	// holdLists comes before the syncs: a list waits for the servers
	// starting, then is brought up to date.
	// track comes after upToDate: what a client lists is recorded once
	// the surface is brought up to date for it.
	g.server.AddReceivingMiddleware(g.limitIdentities, g.calls.middleware, noCacheFields, g.withProblem, g.holdLists, g.bridge.startup,
		g.upToDate, g.track, g.listsPerCaller, g.endWithGateway, g.logLevels.track(g.Server))
	if tracer := o.Tracer; tracer != nil {
		// Added last, so outermost: a request refused by the cap has its
		// span too.
		g.server.AddReceivingMiddleware(traced(tracer))
	}
	// The panic net is the outermost of all (panics.go).
	g.server.AddReceivingMiddleware(g.recoverRequests)
	g.server.AddSendingMiddleware(g.recoverSending, g.filter)
	g.apply(a)
	g.syncMu.Unlock()
	g.bridge.start(o.Debounce)
	s.OnDispose("gateway", g.Close)
	if err := errors.Join(g.metrics.gauge(sessionsDef, g.countSessions), g.metrics.gauge(inFlightDef, g.calls.inFlight)); err != nil {
		return nil, err
	}
	return g, nil
}

// upToDate answers what depends on the surface (initialize, with the
// instructions, tools/list and tools/call) from an assembly that has every
// change the registry announced before the request: a client connecting
// right after a change, within the debounce, sees it.
func (g *Gateway) upToDate(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover", "tools/list", "tools/call":
			// behind also holds a request while a sync is applying: go-sdk
			// would list, or miss, the tools it has added so far.
			if g.behind() {
				if err := g.catchUp(ctx); err != nil && ctx.Err() == nil && g.ctx.Err() == nil {
					g.logger.Warn("gateway: tool surface not updated; the client gets the previous one", "err", err)
				}
			}
		}
		res, err := next(ctx, method, req)
		// The instructions are the current assembly's sections, which MCP
		// cannot announce a change of: each client gets them as they are
		// when it connects.
		// A failed request's result may be a typed nil (a second
		// initialize on a session), which would crash the process.
		switch r := res.(type) {
		case *mcp.InitializeResult:
			if r != nil {
				r.Instructions = *g.instructions.Load()
			}
		case *mcp.DiscoverResult:
			if r != nil {
				r.Instructions = *g.instructions.Load()
			}
		}
		return res, err
	}
}

// endWithGateway ends every request when the gateway closes. Close ends
// the sessions, and go-sdk's session Close waits for the requests in
// flight: a tool call would hold it up, and a subscriptions/listen (which
// lasts until its context ends) that arrives while Close runs would hold
// it forever, since go-sdk cancels only the listens it saw before.
//
// A request ended so (a drain's cut, or Close) that then fails is
// answered with an error saying the gateway is stopping, not with the
// cancellation of a context the client knows nothing of.
func (g *Gateway) endWithGateway(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(g.stopping, func() { cancel(errStopping) })()
		res, err := next(ctx, method, req)
		if context.Cause(ctx) == errStopping && (err != nil || isErrorResult(res)) { //nolint:errorlint // our own sentinel, set as it is
			return nil, &jsonrpc.Error{Code: codeBusy, Message: stoppingMessage}
		}
		return res, err
	}
}

// errStopping is the cause of a request's end by endWithGateway.
var errStopping = errors.New("the gateway is stopping")

// stoppingMessage is what a request ended by the gateway's stop is told.
const stoppingMessage = "the gateway is stopping (shut down, or its drain outlasted drainTimeout): this request was cut before it finished, and may have been partly done; retry it on another gateway, or once this one is back"

// isErrorResult reports whether res is a tool call's failure.
func isErrorResult(res mcp.Result) bool {
	r, ok := res.(*mcp.CallToolResult)
	return ok && r != nil && r.IsError
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
// Connect. Its tool set follows the registry until Close, which also ends
// every session connected to it.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Done is closed when the gateway is closed (its scope disposed): a front
// end serving a session of its own on Server learns there that the session
// has ended and its client must reconnect.
func (g *Gateway) Done() <-chan struct{} { return g.done }

// refreshSoon schedules a re-assembly after the debounce delay; calls within the
// delay coalesce into one. The registry's assembly changes call it. A
// client request that depends on the surface does not wait for the delay.
//
// A steady stream of changes postpones the re-assembly by at most
// maxDebounceFactor debounce delays from the first, so clients never wait
// indefinitely on a flapping server.
func (g *Gateway) refreshSoon() {
	g.stale.Store(true)
	g.refresh.Trigger()
}

func (g *Gateway) fire() {
	if err := g.syncNow(g.ctx); err != nil && g.ctx.Err() == nil {
		g.logger.Error("gateway: tool surface not updated; clients keep the previous one", "err", err)
	}
}

// syncNow assembles now and brings the server's tool set in line with the
// assembly: only tools whose name, description or schema bytes changed are
// added, replaced or removed, so an unchanged assembly sends clients nothing.
// On an assembly error the server keeps its tools.
//
// The assembly's sections become the instructions of the clients that
// connect next: MCP has no notification for changed instructions.
func (g *Gateway) syncNow(ctx context.Context) error {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	return g.syncLocked(ctx)
}

// syncLocked is syncNow's work; the caller holds syncMu.
func (g *Gateway) syncLocked(ctx context.Context) error {
	if err := g.ctx.Err(); err != nil {
		return fmt.Errorf("gateway: closed: %w", err)
	}
	// Cleared, and the registry's changes counted, before assembling: a
	// change from here on is not in this assembly, and marks the surface
	// stale (behind) again.
	g.stale.Store(false)
	changes := g.reg.Changes()
	a, err := g.assemble(ctx)
	if err != nil {
		if ctx.Err() != nil {
			// The request that synced is gone, not the assembly broken:
			// the next one tries again.
			g.stale.Store(true)
		} else {
			// Broken until the registry changes: not retried at every
			// request, and /readyz says why.
			g.startup.assembleErr.Store(&err)
			g.startup.synced.Store(changes)
		}
		if g.afterSync != nil {
			g.afterSync(0, 0, err)
		}
		return err
	}
	added, removed := g.apply(a)
	g.startup.assembleErr.Store(nil)
	g.startup.synced.Store(changes)
	if g.afterSync != nil {
		g.afterSync(added, removed, nil)
	}
	return nil
}

// assemble returns the registry's assembly for the gateway's caller.
func (g *Gateway) assemble(ctx context.Context) (tools.Assembly, error) {
	a, err := g.reg.Assemble(ctx, g.surfaceCaller)
	if err != nil {
		return tools.Assembly{}, fmt.Errorf("gateway: assemble the tool surface: %w", err)
	}
	return a, nil
}

// apply makes a's tools the server's tool set by diff, and its sections the
// instructions, and returns how many tools it added or replaced and
// removed. The caller holds syncMu.
func (g *Gateway) apply(a tools.Assembly) (added, removed int) {
	text := instructions(a.Sections)
	g.instructions.Store(&text)
	want := g.surface(a)
	next := make(map[string]toolState, len(want))
	var add []*mcp.Tool
	for _, s := range want {
		if _, dup := next[s.name]; dup {
			g.logger.Warn("gateway: the surface lists a tool twice; serving the first", "tool", s.name)
			continue
		}
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
		next[s.name] = st
		if cur, ok := g.current[s.name]; ok && cur == st {
			continue
		}
		add = append(add, t)
	}
	var remove []string
	for name := range g.current {
		if _, ok := next[name]; !ok {
			remove = append(remove, name)
		}
	}
	sort.Strings(remove)

	changed := len(add) > 0 || len(remove) > 0
	if changed {
		g.lists.changing(listTools)
	}
	if len(remove) > 0 {
		g.server.RemoveTools(remove...)
	}
	for _, t := range add {
		if err := g.addTool(t, next[t.Name].public); err != nil {
			g.logger.Warn("gateway: tool not served", "tool", t.Name, "err", err)
			delete(next, t.Name)
			if _, had := g.current[t.Name]; had {
				g.server.RemoveTools(t.Name)
				remove = append(remove, t.Name)
			}
		}
	}
	g.current = next
	g.storeServed(next)
	if changed || g.lists.sig(listTools) == "" {
		g.lists.setSig(listTools, toolsSignature(next))
	}
	if changed {
		g.logger.Info("gateway: tool surface changed", "tools", len(next), "added", len(add), "removed", len(remove))
	}
	return len(add), len(remove)
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
	g.server.AddTool(t, g.forwarding(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.callTool(ctx, public, req)
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

// callTool runs one tools/call of the registry's tool public through the
// registry. The request's context carries the client's cancellation to the
// tool, and the tool's progress to the client's progress token.
//
// Every failure is isError with its explanation: the registry's (a
// refusal, a tool's error such as an MCP server's isError, a failed
// validation) and a tool's own failed answer (Output.Failed, as mcp_call's
// refusals).
func (g *Gateway) callTool(ctx context.Context, public string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := arguments(req.Params.Arguments)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	// The server's log messages during the call reach the client at the
	// level it set (go-sdk's Log filters; a 2026-07-28 request carries its
	// own level, which the call's ctx holds).
	// The client's questions channels (forwarding's), and its log and
	// progress.
	var ch tools.Channels
	if q := tools.ChannelsFromContext(ctx); q != nil {
		ch = *q
	}
	if g.logLevels.wants(req) {
		ch.Log = func(m tools.LogMessage) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(m.Level), Logger: m.Logger, Data: m.Data})
		}
	}
	if token := req.Params.GetProgressToken(); token != nil {
		ch.Progress = func(p tools.Progress) {
			// A client that is gone gets nothing; the call goes on until
			// its own cancellation.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message,
			})
		}
	}
	res := g.reg.Run(ctx, tools.Call{Caller: g.callerOf(req), Name: public, Args: args, Channels: &ch})
	if res.Err != nil {
		if ctx.Err() != nil {
			// The client cancelled or went away: there is no one to tell.
			return nil, ctx.Err()
		}
		return errorResult(res.Err.Error()), nil
	}
	if r, ok := res.Value.(tools.MCPResult); ok {
		if out := r.MCPCallToolResult(); out != nil {
			out.IsError = res.Failed
			return out, nil
		}
		// Made of JSON: decode it once here.
		out, err := passThrough(r)
		if err == nil {
			out.IsError = res.Failed
			return out, nil
		}
		// The gateway's caller passes MCP results through, so there is
		// no model-facing content to fall back on.
		g.logger.Warn("gateway: the MCP result does not decode", "tool", public, "err", err)
		return errorResult(fmt.Sprintf("the result of %q could not be relayed: %v", public, err)), nil
	}
	return &mcp.CallToolResult{Content: g.content(public, res.Content), IsError: res.Failed}, nil
}

// passThrough decodes r's blocks into a result, with go-sdk's own decoder
// of each content type. The blocks are JSON already (the server's, as
// go-sdk encoded them): they are joined as they are, not encoded again.
func passThrough(r tools.MCPResult) (*mcp.CallToolResult, error) {
	blocks, structured := r.MCPContent(), r.MCPStructuredContent()
	n := len(`{"content":[],"structuredContent":}`) + len(structured)
	for _, b := range blocks {
		n += len(b) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"content":[`...)
	for i, b := range blocks {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, b...)
	}
	buf = append(buf, ']')
	if len(structured) > 0 {
		buf = append(buf, `,"structuredContent":`...)
		buf = append(buf, structured...)
	}
	buf = append(buf, '}')
	var out mcp.CallToolResult
	if err := json.Unmarshal(buf, &out); err != nil {
		return nil, err
	}
	return &out, nil
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
	store := g.store
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

// Close stops following the registry, waits for a re-assembly in flight
// and ends every session connected to the server: a gateway that is gone
// must not keep serving a surface nobody updates. Its scope's dispose calls
// it; it is idempotent.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		close(g.done)
		g.cancel()
		g.refresh.Stop()
		if g.bridge != nil {
			g.bridge.stop()
		}
		g.trips.closeAll()
		if g.server != nil { // nil: New failed before making it
			for ss := range g.server.Sessions() {
				ss.Close()
			}
		}
		g.undelivered.Stop()
		g.calls.refused.Stop()
		g.uninitialized.Stop()
	})
	return nil
}

// sdkLogger is the logger handed to go-sdk: the gateway's, with go-sdk's
// routine records demoted to debug.
func (g *Gateway) sdkLogger() *slog.Logger {
	return slog.New(quietInfo{g.logger.Handler(), g.undelivered, g.uninitialized})
}

// quietInfo demotes go-sdk's info records (every session connecting and
// disconnecting) to debug, so that the gateway's own log stays readable,
// and counts its per-session warnings of an undelivered notification into
// undelivered instead of writing them: go-sdk writes one per session
// without a GET stream, 40,000 lines for one change with 40,000 sessions.
// Its errors about a client's requests out of order are counted into
// outOfOrder: a client without a token could otherwise write one line per
// request.
type quietInfo struct {
	slog.Handler
	undelivered, outOfOrder *tally
}

// outOfOrder reports whether msg is one of go-sdk's error records about a
// client's requests sent out of order: the client's fault, and answered
// with an error already.
func outOfOrder(msg string) bool {
	switch msg {
	case "method invalid during initialization",
		"initialized before initialize",
		"duplicate initialized notification",
		"duplicate initialize request",
		"method removed in the new protocol":
		return true
	}
	return false
}

func (q quietInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, demote(l))
}

func (q quietInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/") {
		q.undelivered.Add()
		return nil
	}
	if r.Level == slog.LevelError && outOfOrder(r.Message) {
		q.outOfOrder.Add()
		return nil
	}
	r.Level = demote(r.Level)
	return q.Handler.Handle(ctx, r)
}

func (q quietInfo) WithAttrs(as []slog.Attr) slog.Handler {
	return quietInfo{q.Handler.WithAttrs(as), q.undelivered, q.outOfOrder}
}
func (q quietInfo) WithGroup(name string) slog.Handler {
	return quietInfo{q.Handler.WithGroup(name), q.undelivered, q.outOfOrder}
}

// tallyInterval is the shortest time between two log lines of one tally.
const tallyInterval = 5 * time.Second

// tally counts repeated events (refused connections, undelivered
// notifications) and logs them as one line per interval with the number
// since the last line, so that a flood cannot flood the log.
type tally struct {
	emit func(n int)

	mu       sync.Mutex
	interval time.Duration
	n        int
	timer    *time.Timer // pending line; nil when none
	stopped  bool
}

func newTally(interval time.Duration, emit func(n int)) *tally {
	return &tally{interval: interval, emit: emit}
}

// Add counts one event; its line is written at most interval later.
func (t *tally) Add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.n++
	if t.timer == nil {
		t.timer = time.AfterFunc(t.interval, t.flush)
	}
}

func (t *tally) flush() {
	t.mu.Lock()
	n := t.n
	t.n, t.timer = 0, nil
	t.mu.Unlock()
	if n > 0 {
		t.emit(n)
	}
}

// Stop writes the pending count now and counts nothing more.
func (t *tally) Stop() {
	t.mu.Lock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	n := t.n
	t.n = 0
	t.mu.Unlock()
	if n > 0 {
		t.emit(n)
	}
}

// setInterval changes the interval of the lines to come (tests).
func (t *tally) setInterval(d time.Duration) {
	t.mu.Lock()
	t.interval = d
	t.mu.Unlock()
}

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
