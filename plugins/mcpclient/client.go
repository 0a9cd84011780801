package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/bridge"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/calls"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/oauth"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/result"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/stdio"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/wire"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/tools"
)

// defaultCloseTimeout bounds the wait for a connection to close (and, for
// stdio, its process to exit) before the supervisor stops rather than risk
// two server processes at once.
const defaultCloseTimeout = 5 * time.Second

// probeTimeout bounds the ping that checks a connection after a call failed
// below the protocol level.
const probeTimeout = 5 * time.Second

// frameLimitText is how go-sdk words the error of an inbound message over
// its stdio frame limit (mcp.DefaultMaxLineLength, 16 MiB). The error value
// (errFrameTooLarge in go-sdk's mcp/transport.go) is unexported, so it is
// matched by its text.
const frameLimitText = "exceeded the configured maximum line length"

// oversized reports whether err comes from a server message over the frame
// limit. go-sdk's reader stops at such a message (its JSON decoder cannot
// skip the rest of it), so the whole connection is gone, and every call in
// flight on it fails with this error.
func oversized(err error) bool {
	return err != nil && strings.Contains(err.Error(), frameLimitText)
}

// frameLimitMiB is the stdio frame limit in MiB, for messages.
const frameLimitMiB = mcp.DefaultMaxLineLength >> 20

// clientInfo is how the host introduces itself to servers.
var clientInfo = &mcp.Implementation{Name: "dsh-host", Version: "0.1.0"}

// options are a client's collaborators, passed explicitly so that tests can
// run the core without a host.
type options struct {
	cfg Config
	// scope owns the registered tools (their Origin.Instance is its id).
	scope  *host.Scope
	logger *slog.Logger
	// detail publishes the instance's one-line state (Scope.SetDetail).
	detail   func(string)
	registry *tools.Registry
	// extra has the resources and commands services, each nil when absent.
	extra bridge.Options
	// store is nil when no attachment store is mounted.
	store *attachments.Store
	// output offers mcp_read_output to read cut results on; nil when the
	// mcp-output instance (services/outputs) is absent, and cuts then name
	// no tool.
	output    *outputs.Offer
	transport transportFactory
	// oauth logs in to a remote server that asks; nil for stdio.
	oauth *oauth.Handler
	// closeTimeout defaults to defaultCloseTimeout.
	closeTimeout time.Duration
	// now is the clock for uptime (the budget reset); time.Now by default.
	now func() time.Time
	// releaseDelay defaults to httpReleaseDelay (see client.release).
	releaseDelay time.Duration
	// elicit answers the server's elicitations; nil declines them all.
	elicit *elicit.Service
	// catalogDir holds the catalog cache (catalog.go); "" keeps none.
	catalogDir string
}

// client is one MCP server: a supervisor goroutine (run) owns the
// connection, the registered tool generation and the reconnect state, and
// serializes every sync through its select loop.
type client struct {
	opt   options
	label string // mcp-client(<serverName>), in logs and errors

	first firstAttempt // what Apply waits for

	// Owned by the run goroutine.
	conn  *conn      // the current connection generation
	retry retryState // reconnect policy and where it stands
	login loginState // a server that waits for a person's login

	watch watchState // the connections' ends and the signals they send the loop
	// shut ends at shutdown: watchers stop reporting, and successful HTTP
	// calls still finishing their exchange are let go.
	shut lifetime

	// mu guards shared, and lz's fields marked so.
	mu     sync.Mutex
	shared sharedState

	tools  *toolset.Set      // the server's tools in the registry, and the catalog cache
	calls  *calls.Table      // tools/calls in flight
	bridge *bridge.Bridge    // resources, prompts and completion
	proj   *result.Projector // what results become for a model
	lz     lazyState         // lazy start, idle shutdown (lazy.go)

	// tracer and upstream are the host's telemetry (nil: off).
	tracer   trace.Tracer
	upstream *upstreamMetrics

	// pinHint logs once that the server needs protocolVersion pinned
	// (notePinNeeded).
	pinHint sync.Once
	// revision is the protocol revision a server without a pin was found
	// to need (revision.go); owned by the run goroutine. revisionNote logs
	// the switch once.
	revision     string
	revisionNote sync.Once
}

// firstAttempt is the outcome of the first connection attempt.
type firstAttempt struct {
	ready chan struct{} // closed after the first attempt settled
	err   error         // its failure, set before ready closes
}

// retryState is the supervisor's reconnect state.
type retryState struct {
	failed      int // consecutive failed attempts
	connectedAt time.Time
	timer       *time.Timer // the next attempt; nil when none is due
	halted      bool        // reconnecting stopped for good
	hung        bool        // a close never finished: do not wait for watchers
	oversized   int         // connections lost to an oversized message in a row
	soon        bool        // timer is an attempt due at once (settleWaiters)
	// started: some attempt connected; until then the detail says
	// "failed to start: <cause>" rather than "reconnecting".
	started bool
	// reconnects counts every attempt scheduled since the run started
	// (InstanceStatus.Reconnects); unlike failed, it never starts over.
	reconnects int
}

// loginState is set while the server waits for a login: stamp is the
// token file's stamp then, and tried says the browser step already ran in
// this outage.
type loginState struct {
	needed bool
	stamp  string
	tried  bool
}

// watchState carries what the connections tell the supervisor.
type watchState struct {
	sessions sync.WaitGroup // one watcher per session (follow)
	resync   chan struct{}  // coalesced list_changed signal, cap 1
	down     chan downEvent
	probe    chan *conn // cap 1
	older    chan *conn // a connection to switch to 2025-11-25, cap 1
}

type lifetime struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// sharedState is what calls read of the supervisor's state (under mu).
type sharedState struct {
	live         *conn  // the connection calls use; nil during an outage
	unavailable  string // why live is nil, for call errors
	instructions string // the server's, as the prompt carries them
	resyncFor    *conn  // the connection whose list_changed is queued
	// sandbox is what the sandbox enforces for the stdio server last
	// started, or why nothing, for the status ("" for HTTP).
	sandbox string
}

// conn is one connection generation.
type conn struct {
	session *mcp.ClientSession
	closed  chan struct{} // closed when the session ended
	// logs is whether the server declares logging; requestLogLevel is the
	// level each of its requests carries ("" when the revision has
	// logging/setLevel instead). Both are fixed for the session: the
	// instance's log level does not change while it runs.
	logs            bool
	requestLogLevel mcp.LoggingLevel
	// answered is set once a call got its answer on this connection: the
	// server has proven healthy, so an oversized loss after it is not one
	// "in a row" with the losses before.
	answered atomic.Bool
	// calls counts the tools/calls running on it; retiring is set once a
	// call asked for a switch of revision (revision.go), which waits for
	// them.
	calls    atomic.Int32
	retiring atomic.Bool
	// offered is the revision asked for at connect ("" for go-sdk's latest).
	offered string
}

// Session and Closed make a conn a bridge.Conn.
func (cn *conn) Session() *mcp.ClientSession { return cn.session }
func (cn *conn) Closed() <-chan struct{}     { return cn.closed }

// link is what the bridge reaches of its client.
type link struct{ c *client }

func (l link) Acquire(ctx context.Context) (bridge.Conn, func(), error) {
	cn, done, err := l.c.acquire(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	return cn, done, nil
}

func (l link) Current() (bridge.Conn, error) {
	cn, err := l.c.current()
	if err != nil {
		return nil, err
	}
	return cn, nil
}

func (l link) Release(cancel context.CancelFunc, err error) { l.c.release(cancel, err) }
func (l link) Probe(cn bridge.Conn)                         { l.c.requestProbe(cn.(*conn)) }

type downEvent struct {
	cn  *conn
	err error
}

func newClient(opt options) *client {
	if opt.closeTimeout <= 0 {
		opt.closeTimeout = defaultCloseTimeout
	}
	if opt.detail == nil {
		opt.detail = func(string) {}
	}
	if opt.now == nil {
		opt.now = time.Now
	}
	if opt.releaseDelay <= 0 {
		opt.releaseDelay = httpReleaseDelay
	}
	c := &client{
		opt:    opt,
		label:  "mcp-client(" + opt.cfg.ServerName + ")",
		first:  firstAttempt{ready: make(chan struct{})},
		watch:  watchState{resync: make(chan struct{}, 1), down: make(chan downEvent), probe: make(chan *conn, 1), older: make(chan *conn, 1)},
		shared: sharedState{unavailable: "the server is still connecting"},
	}
	c.proj = &result.Projector{Server: opt.cfg.ServerName, Label: c.label, Log: opt.logger, Registry: opt.registry,
		Store: opt.store, Output: opt.output, MaxBytes: opt.cfg.MaxResultBytes}
	catalog := ""
	if opt.catalogDir != "" {
		catalog = catalogPath(opt.catalogDir, &opt.cfg)
	}
	c.tools = toolset.New(toolset.Options{Server: opt.cfg.ServerName, Label: c.label, Log: opt.logger,
		Registry: opt.registry, Scope: opt.scope, Include: opt.cfg.Tools.Include, Exclude: opt.cfg.Tools.Exclude,
		Pin: opt.cfg.Pin, Execute: c.executor, Render: c.proj.Render, CatalogPath: catalog})
	c.shut.ctx, c.shut.cancel = context.WithCancel(context.Background())
	c.calls = calls.New(calls.Options{TimeoutMs: opt.cfg.ToolCallTimeoutMs, MaxMs: opt.cfg.ToolCallMaxMs,
		ReleaseDelay: opt.releaseDelay, Logger: opt.logger, Label: c.label})
	c.lz.wake = make(chan struct{}, 1)
	return c
}

// setState publishes detail, and why calls fail while there is no
// connection (empty when connected). The detail goes last, so that whoever
// sees it (status, a test) also sees the metric and the calls' reason.
func (c *client) setState(detail, unavailable string) {
	c.upstream.setUp(unavailable == "")
	c.mu.Lock()
	c.shared.unavailable = unavailable
	c.mu.Unlock()
	c.publish(detail)
}

// setConnected publishes the connected state with the number of tools.
func (c *client) setConnected() {
	noun := "tools"
	if c.tools.Len() == 1 {
		noun = "tool"
	}
	detail := fmt.Sprintf("connected, %d %s", c.tools.Len(), noun)
	if c.opt.oauth != nil {
		if login := c.opt.oauth.Status(); login != "" {
			detail += ", " + login
		}
	}
	c.mu.Lock()
	if c.shared.sandbox != "" {
		detail += ", " + c.shared.sandbox
	}
	c.mu.Unlock()
	c.setState(detail, "")
}

// setInstructions sets the server's instructions that assemble adds to
// the prompt. A change is an assembly change the registry cannot see (the
// tools may stay the same), so it is announced, outside c.mu: followers
// such as the gateway assemble again at once.
func (c *client) setInstructions(text string) {
	c.mu.Lock()
	old := c.shared.instructions
	c.shared.instructions = text
	c.mu.Unlock()
	if text != old {
		c.opt.registry.AssemblyChanged()
	}
}

// current returns the live connection, or an error saying why there is none.
func (c *client) current() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shared.live == nil {
		return nil, fmt.Errorf("%s: not connected: %s", c.label, c.shared.unavailable)
	}
	return c.shared.live, nil
}

// run is the supervisor. It returns when ctx is done, after closing the
// connection (bounded) and unregistering every tool.
func (c *client) run(ctx context.Context) {
	defer c.shutdown()
	c.begin(ctx)
	for {
		var fire <-chan time.Time
		if c.retry.timer != nil {
			fire = c.retry.timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-fire:
			c.retry.timer = nil
			c.attempt(ctx, false)
		case ev := <-c.watch.down:
			if ev.cn == c.conn {
				c.lost(ctx, ev.err)
			}
		case <-c.watch.resync:
			c.resyncTools(ctx)
		case cn := <-c.watch.probe:
			c.probeConn(ctx, cn)
		case cn := <-c.watch.older:
			c.switchRevision(ctx, cn)
		case <-c.bridge.SyncC():
			if target, what := c.bridge.Queued(); target != nil && target == bridge.Conn(c.conn) && !c.retry.halted && what != 0 {
				c.bridge.Sync(ctx, target, what, false)
			}
		case <-c.lz.wake:
			c.startOnDemand(ctx)
		case <-c.idleC():
			c.idleCheck()
		}
	}
}

// attempt connects, discovers and registers. The first attempt with
// failOnStartupError fails the instance instead of scheduling a retry.
func (c *client) attempt(ctx context.Context, first bool) {
	c.retry.soon = false
	// Calls waiting for a connection take this attempt's outcome.
	defer c.resolveStart()
	strict := first && c.opt.cfg.FailOnStartupError
	if c.login.needed && c.opt.oauth.Stamp() == c.login.stamp {
		// Still no new token: look again later (the poll of needLogin).
		c.retry.timer = time.NewTimer(loginPoll)
		return
	}
	if first {
		c.setState("connecting", "the server is still connecting")
	}
	bound, boundText := c.attemptTimeout()
	actx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	cn, list, err := c.connectBounded(actx)
	if ctx.Err() != nil {
		// Disposed while connecting: whatever came up is closed by
		// connectBounded or shutdown; say nothing.
		if cn != nil {
			c.closeConn(cn, "")
		}
		return
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && actx.Err() != nil {
			err = fmt.Errorf("no answer within %s while connecting and listing tools: %w", boundText, err)
		}
		c.lz.lastErr = err
		c.lastError(err)
		if cn != nil && !c.closeConn(cn, "failed generation") {
			return
		}
		if c.retry.halted {
			return
		}
		if nl := (*oauth.NeedsLoginError)(nil); errors.As(err, &nl) && c.opt.oauth != nil {
			if first {
				c.reportFailed(err) // not ready until a person logs in
			}
			c.needLogin(ctx, first, nl)
			return
		}
		if first {
			c.opt.logger.Error(c.label+": initial connection or tool synchronization failed", "err", err)
			c.reportFailed(err)
		} else {
			c.opt.logger.Warn(c.label+": connection attempt failed", "err", err)
		}
		if strict {
			c.first.err = err
			c.setState("failed to start: "+err.Error(), "the first connection failed")
			return
		}
		if c.demandFailed(err) {
			return
		}
		c.scheduleReconnect("failed", err)
		return
	}

	c.login.needed, c.login.tried = false, false
	// Calls may use the connection as soon as its tools are registered.
	c.conn = cn
	c.retry.started = true
	c.retry.connectedAt = c.opt.now()
	c.mu.Lock()
	c.shared.live = cn
	c.mu.Unlock()
	c.setInstructions(c.capInstructions(cn.session.InitializeResult()))
	swapErr := c.swapLive(list)
	if err := swapErr; err != nil && strict {
		c.conn = nil
		c.mu.Lock()
		c.shared.live = nil
		c.mu.Unlock()
		c.setInstructions("")
		c.first.err = err
		c.closeConn(cn, "failed generation")
		c.setState("failed: "+err.Error(), "tool registration failed")
		return
	}
	c.bridge.Sync(ctx, cn, bridge.Resources|bridge.Prompts, true)
	if swapErr != nil {
		c.reportFailed(swapErr)
	} else {
		c.reportReady()
	}
	if c.retry.failed > 0 {
		c.opt.logger.Info(fmt.Sprintf("%s: reconnected and re-synced tools (attempt %d/%d)", c.label, c.retry.failed, c.opt.cfg.Reconnect.MaxAttempts))
	}
	c.connected()
	c.setConnected()
	// A list_changed that arrived during discovery is handled by the loop
	// (resyncFor already points at cn).
}

// connectBounded runs connect, and gives up on it if it outlives ctx by
// more than the close timeout (a transport whose close never returns would
// otherwise hold the supervisor, and dispose, forever).
func (c *client) connectBounded(ctx context.Context) (*conn, []*mcp.Tool, error) {
	type result struct {
		cn   *conn
		list []*mcp.Tool
		err  error
	}
	ch := make(chan result, 1)
	version := c.protocolVersion()
	go func() {
		cn, list, err := c.connect(ctx, version)
		ch <- result{cn, list, err}
	}()
	select {
	case r := <-ch:
		return r.cn, r.list, r.err
	case <-ctx.Done():
	}
	t := time.NewTimer(c.opt.closeTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.cn, r.list, r.err
	case <-t.C:
	}
	go func() {
		if r := <-ch; r.cn != nil {
			_ = r.cn.session.Close()
		}
	}()
	c.retry.hung = true
	c.halt(fmt.Sprintf("a connection attempt did not finish within %s after it was abandoned", c.opt.closeTimeout),
		"reconnect stopped to avoid overlapping server processes; reload the instance or restart the host to retry")
	return nil, nil, errors.New("connection attempt abandoned")
}

// connect opens a session on revision version ("" for go-sdk's latest) and
// lists every tool.
func (c *client) connect(ctx context.Context, version string) (*conn, []*mcp.Tool, error) {
	cn := &conn{closed: make(chan struct{}), offered: version}
	questions := &bridge.Questions{Server: c.opt.cfg.ServerName, Label: c.label, Log: c.opt.logger, Elicit: c.opt.elicit, Calls: c.calls}
	opts := &mcp.ClientOptions{
		Logger: c.opt.logger.With("component", "go-sdk"),
		// Roots: the entry's (roots:), or those of a gateway call's client.
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			c.bridge.Changed(cn, bridge.Resources)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			c.bridge.Updated(cn, req)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			c.bridge.Changed(cn, bridge.Prompts)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.listChanged(cn)
		},
		ProgressNotificationHandler: c.calls.Progress,
		LoggingMessageHandler:       c.onLog,
		// Sampling is declared so that a call made through the gateway can
		// reach its client's model; other calls are refused (OnSample).
		CreateMessageWithToolsHandler: questions.OnSample,
	}
	if c.opt.elicit != nil {
		opts.ElicitationHandler = questions.OnElicit
		opts.Capabilities.Elicitation = bridge.ElicitCapabilities()
	}
	client := mcp.NewClient(clientInfo, opts)
	//lint:ignore SA1019 roots stay functional through their deprecation window.
	client.AddRoots(c.opt.cfg.roots()...)
	client.AddReceivingMiddleware(questions.CallerRoots)
	if c.opt.elicit != nil {
		client.AddSendingMiddleware(questions.URLRequired)
	}
	if c.tracer != nil {
		client.AddSendingMiddleware(traceContextOut)
	}
	tr := c.opt.transport()
	// What go-sdk does not expose is read on the wire (package wire).
	subs := []wire.Subscriber{c.calls.Wire(), c.tools.Tasks().Wire(), bridge.PromptArguments()}
	if c.opt.cfg.Transport != TransportStreamableHTTP {
		subs = append(subs, c.calls.WireLogs())
	}
	watched := wire.New(subs...).Wrap(tr)
	session, err := client.Connect(ctx, watched, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if st, ok := tr.(*stdio.Transport); ok {
		report := st.SandboxReport()
		c.mu.Lock()
		c.shared.sandbox = report
		c.mu.Unlock()
		if c.opt.scope != nil && report != "" {
			c.opt.scope.SetSandbox(report) // InstanceStatus.Sandbox
		}
		if c.opt.scope != nil {
			c.opt.scope.SetStderr(st.StderrTail) // InstanceStatus.Stderr
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", explainStart(ctx, tr, err))
	}
	cn.session = session
	c.follow(cn)
	c.logLevels(ctx, cn)
	list, err := toolset.List(ctx, session)
	if err != nil {
		return cn, nil, err
	}
	select {
	case <-cn.closed:
		return cn, nil, errors.New("the connection closed during tool discovery")
	default:
	}
	return cn, list, nil
}

// follow reports cn's end to the supervisor.
func (c *client) follow(cn *conn) {
	c.watch.sessions.Add(1)
	go func() {
		defer c.watch.sessions.Done()
		err := cn.session.Wait()
		close(cn.closed)
		select {
		case c.watch.down <- downEvent{cn, err}:
		case <-c.shut.ctx.Done():
		}
	}()
}

// listChanged queues a re-sync for cn; notifications of a stale session are
// dropped by the loop.
func (c *client) listChanged(cn *conn) {
	c.mu.Lock()
	c.shared.resyncFor = cn
	c.mu.Unlock()
	select {
	case c.watch.resync <- struct{}{}:
	default:
	}
}

func (c *client) resyncTools(ctx context.Context) {
	c.mu.Lock()
	target := c.shared.resyncFor
	c.shared.resyncFor = nil
	c.mu.Unlock()
	if target == nil || target != c.conn || c.retry.halted {
		return
	}
	c.opt.logger.Info(c.label + ": tool list changed, re-syncing")
	lctx, cancel := context.WithTimeout(ctx, ms(c.opt.cfg.StartupTimeoutMs))
	defer cancel()
	list, err := toolset.List(lctx, target.session)
	if err != nil {
		select {
		case <-target.closed:
			// The connection ended: the supervisor reconnects and re-syncs.
		default:
			if ctx.Err() == nil {
				c.opt.logger.Error(c.label+": tool re-sync failed; keeping the previous tools", "err", err)
			}
		}
		return
	}
	c.swapLive(list)
	if c.conn == target {
		c.setConnected()
	}
}

// requestProbe asks the supervisor to check cn after a call failed below
// the protocol level (for Streamable HTTP, a dropped server surfaces only
// per request).
func (c *client) requestProbe(cn *conn) {
	select {
	case c.watch.probe <- cn:
	default:
	}
}

func (c *client) probeConn(ctx context.Context, cn *conn) {
	if cn != c.conn {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	err := cn.session.Ping(pctx, nil)
	if err == nil || ctx.Err() != nil {
		return
	}
	if bridge.Answered(err) {
		return
	}
	c.opt.logger.Warn(c.label+": the server did not answer a ping after a failed call", "err", err)
	c.lost(ctx, err)
}

// lost handles the end of the current connection.
func (c *client) lost(ctx context.Context, err error) {
	defer c.settleWaiters()
	cn := c.conn
	c.conn = nil
	c.mu.Lock()
	c.shared.live = nil
	c.mu.Unlock()
	if err == nil {
		err = errors.New("the server closed the connection")
	}
	if !c.closeConn(cn, "lost generation") {
		return
	}
	if ctx.Err() != nil {
		return
	}
	c.lastError(err)
	if c.lostToDormant(err) {
		return
	}
	if cn != nil && cn.answered.Load() {
		c.retry.oversized = 0
	}
	c.scheduleReconnect("lost", err)
}

// closeConn closes cn and waits for it (for stdio: the process exited),
// bounded by the close timeout. On a timeout it halts the supervisor:
// starting another server while this one may still run is never done.
// what names the generation in the error ("" during dispose).
func (c *client) closeConn(cn *conn, what string) bool {
	done := make(chan struct{})
	go func() {
		_ = cn.session.Close()
		close(done)
	}()
	t := time.NewTimer(c.opt.closeTimeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	}
	c.retry.hung = true
	if what == "" {
		c.opt.logger.Error(fmt.Sprintf("%s: connection did not close within %s during disposal — server shutdown may be incomplete", c.label, c.opt.closeTimeout))
		return false
	}
	c.halt(fmt.Sprintf("%s did not close within %s", what, c.opt.closeTimeout),
		"reconnect stopped to avoid overlapping server processes; reload the instance or restart the host to retry")
	return false
}

// halt stops reconnecting for good; tools stay registered and fail.
func (c *client) halt(why, hint string) {
	c.retry.halted = true
	if c.retry.timer != nil {
		c.retry.timer.Stop()
		c.retry.timer = nil
	}
	c.opt.logger.Error(fmt.Sprintf("%s: %s — %s", c.label, why, hint))
	c.setState("stopped: "+why, why+"; "+hint)
}

// scheduleReconnect applies the reconnect policy after a lost connection
// ("lost") or a failed attempt ("failed").
func (c *client) scheduleReconnect(kind string, err error) {
	p := &c.opt.cfg.Reconnect
	if !p.Enabled {
		c.retry.halted = true
		if kind == "lost" {
			c.opt.logger.Error(c.label+": connection lost and reconnect is disabled — registered tools will fail until the instance is reloaded or the host restarts", "err", err)
		} else {
			c.opt.logger.Error(c.label+": connection failed and reconnect is disabled — no tools were registered; reload the instance or restart the host to connect", "err", err)
		}
		// The status keeps the reason: nothing else will say it again.
		if kind == "lost" || c.retry.started {
			c.setState(fmt.Sprintf("disconnected (reconnect disabled): %v", err),
				fmt.Sprintf("the connection was lost (%v) and reconnect is disabled; reload the instance", err))
		} else {
			c.setState(fmt.Sprintf("failed to start (reconnect disabled): %v", err),
				fmt.Sprintf("the server failed to start (%v) and reconnect is disabled; reload the instance", err))
		}
		return
	}
	if !c.retry.connectedAt.IsZero() && c.opt.now().Sub(c.retry.connectedAt) >= ms(p.MaxDelayMs) {
		c.retry.failed, c.retry.oversized = 0, 0
	}
	c.retry.connectedAt = time.Time{}
	tooLarge := kind == "lost" && oversized(err)
	if tooLarge {
		// A connect succeeded to get here and the server is fine: only one
		// message (often one call's answer, which fails alone) was too
		// large. The budget starts over, or a client calling such a tool
		// could make the host give the server up. Such losses in a row
		// back off instead, so that a server that breaks every connection
		// is not restarted in a loop.
		c.retry.failed = 0
		c.retry.oversized++
	}
	c.retry.failed++
	if c.retry.failed > p.MaxAttempts {
		c.giveUp(err)
		return
	}
	c.upstream.reconnect()
	c.retry.reconnects++
	if c.opt.scope != nil {
		c.opt.scope.SetReconnects(c.retry.reconnects)
	}
	delay := p.backoff(c.retry.failed)
	verb := "connection lost; reconnecting"
	if kind == "failed" {
		verb = "connection failed; retrying"
	} else if tooLarge {
		// The server is fine; only one message was too large to read.
		// Waiting would only keep its tools down, the first time.
		delay = 0
		if c.retry.oversized > 1 {
			delay = p.backoff(c.retry.oversized - 1)
		}
		verb = fmt.Sprintf("the server sent a message over the %d MiB frame limit, which drops the connection; reconnecting", frameLimitMiB)
	}
	c.opt.logger.Warn(fmt.Sprintf("%s: %s in %dms (attempt %d/%d)", c.label, verb, delay.Milliseconds(), c.retry.failed, p.MaxAttempts), "err", err)
	if !c.retry.started {
		c.setState(fmt.Sprintf("failed to start: %v; retry %d/%d in %s", err, c.retry.failed, p.MaxAttempts, delay),
			fmt.Sprintf("the server failed to start (%v); retrying (attempt %d/%d)", err, c.retry.failed, p.MaxAttempts))
	} else {
		c.setState(fmt.Sprintf("reconnecting %d/%d in %s", c.retry.failed, p.MaxAttempts, delay),
			fmt.Sprintf("the connection is down; reconnecting (attempt %d/%d)", c.retry.failed, p.MaxAttempts))
	}
	c.retry.timer = time.NewTimer(delay)
	c.retry.soon = delay == 0
}

func (c *client) giveUp(err error) {
	c.retry.halted = true
	c.releaseReadyHold()
	c.setInstructions("")
	c.tools.Clear()
	c.bridge.Clear()
	max := c.opt.cfg.Reconnect.MaxAttempts
	c.opt.logger.Error(fmt.Sprintf("%s: giving up after %d consecutive failed reconnect attempts — tools unregistered; reload the instance or restart the host to reconnect", c.label, max), "err", err)
	why := err.Error()
	if !c.retry.started {
		why = "failed to start: " + why
	}
	c.setState(fmt.Sprintf("gave up after %d attempts: %s", max, why),
		"the server could not be reached; reload the instance")
}

// shutdown runs when the scope is disposed.
func (c *client) shutdown() {
	c.shut.cancel()
	c.calls.Stop()
	c.stopIdle()
	if c.retry.timer != nil {
		c.retry.timer.Stop()
		c.retry.timer = nil
	}
	c.mu.Lock()
	c.shared.live = nil
	c.shared.unavailable = "the instance is shutting down"
	c.mu.Unlock()
	if c.conn != nil {
		c.closeConn(c.conn, "")
		c.conn = nil
	}
	c.tools.Clear()
	if !c.retry.hung {
		// Every session is closed: their watchers are returning.
		c.watch.sessions.Wait()
	}
	// A call still in flight (a close that timed out waits for it) keeps
	// its timeouts: they are its own timers.
}
