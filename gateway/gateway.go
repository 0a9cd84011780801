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
// clients that prefix them (Config.NameLimit, DropMarker).
//
// Nothing a client would see from the server itself is lost on the way:
// every failure is isError with its explanation (a tools.Result's Err, or
// a tool's own failed answer, Result.Failed, as mcp_call's refusals); a
// listing keeps the server's title, annotations, outputSchema, icons and
// _meta (Definition.MCPTool); a relayed MCP result (tools.MCPResult)
// keeps every content block and its structuredContent; the tool's
// progress and its server's log messages reach the client
// (tools.Channels' Progress and Log). With Config.Raw the MCP servers'
// tools are served under their own names, unfolded; Config.Stateless
// serves stateless Streamable HTTP.
//
// Besides tools it serves what the resources service gathers from every
// server: resources, templates, subscriptions, prompts (named like tools)
// and completion (resources.go, prompts.go); and a server's elicitation or
// sampling request made during a client's call is passed on to that client
// in the style its protocol revision speaks (forward.go). While the
// composition starts, lists wait (bounded by Config.ListWait) for the
// servers starting with it, and Readiness says when the served surface is
// complete (ready.go).
//
// The package registers the `gateway` plugin: an instance injects the tool
// registry (and the attachment store, if any), serves Streamable HTTP when
// its config names an address, and provides the running Gateway (Key) to a
// front end that serves a session of its own (dsh-host serve --stdio).
//
// Its parts: bearer checks inbound OAuth tokens, limits holds each
// identity to its limits, reconcile keeps what the server lists in line
// with what it should.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/limits"
	"github.com/dsh-host/dsh-host/gateway/reconcile"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/debounce"
	"github.com/dsh-host/dsh-host/internal/version"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

// DefaultDebounce is how long the gateway waits after the last registry
// change before it re-assembles: an MCP server re-syncing unregisters and
// registers its whole generation, and clients should see one change.
const DefaultDebounce = 50 * time.Millisecond

// maxDebounceFactor bounds how many debounce delays a burst of changes may
// postpone a re-assembly.
const maxDebounceFactor = 20

// Gateway is an MCP server that mirrors a tool registry for the life of a
// scope. Create it with New and serve Server() on any go-sdk transport (or
// HTTPHandler). It is safe for concurrent use.
type Gateway struct {
	// cfg is the entry's config, with New's defaults.
	cfg    Config
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
	// drainTimeout bounds a drain (Config.DrainTimeout).
	drainTimeout time.Duration

	closeOnce sync.Once
	done      chan struct{} // closed by Close

	syncMu sync.Mutex // serializes syncs
	// tools is what the server lists; guarded by syncMu.
	tools *reconcile.Set[toolState, *mcp.Tool]

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
	// addr is the HTTP listener's address once it listens (the server
	// spans' server.address).
	addr atomic.Pointer[string]
	// problem is what is wrong with the composition, for clients
	// (SetProblem); "" or nil when nothing is.
	problem atomic.Pointer[string]
	// served maps each served tool name to the registry's (identity.go).
	served atomic.Pointer[map[string]string]
	// answers is the HTTP listener's answer budget (answers.go), for its
	// gauge; nil without one.
	answers atomic.Pointer[answerBudget]
	// idLimits are the HTTP listener's limits per identity, nil without
	// inbound OAuth (package limits).
	idLimits atomic.Pointer[limits.PerIdentity]
}

// New returns a gateway serving reg's assembly for the caller
// {Kind: "gateway", ImageInput: true}, for as long as s lives: it follows
// reg (OnAssemblyChange) and is closed when s is disposed. cfg is the
// entry's config (its listener's keys are serve's: New serves nothing),
// deps what it is given; nil means defaults. New assembles once before
// returning, so the first client to connect sees the surface; an assembly
// error is returned, and the gateway is not created.
func New(s *host.Scope, reg *tools.Registry, cfg *Config, deps *Deps) (*Gateway, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	var o Deps
	if deps != nil {
		o = *deps
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
	if c.MaxCallsPerSession <= 0 {
		c.MaxCallsPerSession = DefaultMaxCallsPerSession
	}
	if c.MaxCalls <= 0 {
		c.MaxCalls = DefaultMaxCalls
	}
	if c.NameLimit <= 0 {
		c.NameLimit = DefaultNameLimit
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	g := &Gateway{
		cfg:    c,
		names:  naming{limit: c.NameLimit, dropMarker: c.DropMarker},
		reg:    reg,
		store:  o.Store,
		caller: tools.Caller{Kind: tools.CallerGateway, ID: o.CallerID, ImageInput: true, PassThrough: true, Mask: o.Mask},
		logger: o.Logger,
		raw:    c.Raw,
		done:   make(chan struct{}),
	}
	g.surfaceCaller, g.perIdentity = g.caller, c.Auth != nil
	g.tools = g.toolSet()
	g.startup.init(s, c.ListWait)
	if g.perIdentity {
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
	g.drainTimeout = c.DrainTimeout
	g.calls = &callLimit{perSession: c.MaxCallsPerSession, total: c.MaxCalls, bySession: map[mcp.Session]int{},
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
		g.server.AddReceivingMiddleware(traced(tracer, g.listenAddr))
	}
	if g.metrics != nil {
		g.server.AddReceivingMiddleware(g.countUnknownTools)
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
