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

	"github.com/dsh-host/dsh-host/services/outputs"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/oauth"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/elicit"
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
	// extra are the resources and commands services, each nil when absent.
	extra extraServices
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
	cfg   *Config
	label string
	log   *slog.Logger

	ready    chan struct{} // closed after the first attempt settled
	startErr error         // the first attempt's failure, set before ready closes

	// Owned by the run goroutine.
	conn        *conn
	failed      int
	connectedAt time.Time
	timer       *time.Timer
	halted      bool
	generation  []func() // unregisters each tool of the current generation
	signature   string
	hung        bool // a close never finished: do not wait for watchers
	// needsLogin is set while the server waits for a login; loginStamp is
	// the token file's stamp then, and loginTried says the browser step
	// already ran in this outage.
	needsLogin bool
	loginStamp string
	loginTried bool
	watchers   sync.WaitGroup
	// unofferedLogged: the tools already logged as not offered (offered.go).
	unofferedLogged map[string]bool
	tasks           taskTools // which tools require tasks (offered.go)
	// started: some attempt connected; until then the detail says
	// "failed to start: <cause>" rather than "reconnecting".
	started bool

	resync chan struct{} // coalesced list_changed signal, cap 1
	down   chan downEvent
	probe  chan *conn // cap 1
	ext    extras     // resources and prompts
	// stopped is cancelled at shutdown: watchers stop reporting, and
	// successful HTTP calls still finishing their exchange are let go.
	stopped context.Context
	stop    context.CancelFunc

	mu           sync.Mutex
	live         *conn  // the connection calls use; nil during an outage
	unavailable  string // why live is nil, for call errors
	instructions string
	resyncFor    *conn
	calls        map[string]*inflight // tools/calls in flight, by progress token
	releases     []pendingRelease     // finished HTTP calls' contexts, by time (deadlines.go)

	// deadlines rings for the calls' timeouts and the releases.
	deadlines alarm

	tokens atomic.Int64 // the last progress token handed out
	logged atomic.Int64 // the server's log messages relayed to callers (logrelay.go)

	lz lazyState // lazy start, idle shutdown, catalog cache (lazy.go)
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
}

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
		opt:         opt,
		cfg:         &opt.cfg,
		label:       "mcp-client(" + opt.cfg.ServerName + ")",
		log:         opt.logger,
		ready:       make(chan struct{}),
		resync:      make(chan struct{}, 1),
		down:        make(chan downEvent),
		probe:       make(chan *conn, 1),
		unavailable: "the server is still connecting",
	}
	c.stopped, c.stop = context.WithCancel(context.Background())
	c.deadlines.ring = c.onDeadline
	c.lz.wake = make(chan struct{}, 1)
	return c
}

// setState publishes detail, and why calls fail while there is no
// connection (empty when connected).
func (c *client) setState(detail, unavailable string) {
	c.publish(detail)
	c.mu.Lock()
	c.unavailable = unavailable
	c.mu.Unlock()
}

// setConnected publishes the connected state with the number of tools.
func (c *client) setConnected() {
	noun := "tools"
	if len(c.generation) == 1 {
		noun = "tool"
	}
	detail := fmt.Sprintf("connected, %d %s", len(c.generation), noun)
	if c.opt.oauth != nil {
		if login := c.opt.oauth.Status(); login != "" {
			detail += ", " + login
		}
	}
	c.setState(detail, "")
}

// setInstructions sets the server's instructions that assemble adds to
// the prompt. A change is an assembly change the registry cannot see (the
// tools may stay the same), so it is announced, outside c.mu: followers
// such as the gateway assemble again at once.
func (c *client) setInstructions(text string) {
	c.mu.Lock()
	old := c.instructions
	c.instructions = text
	c.mu.Unlock()
	if text != old {
		c.opt.registry.AssemblyChanged()
	}
}

// current returns the live connection, or an error saying why there is none.
func (c *client) current() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live == nil {
		return nil, fmt.Errorf("%s: not connected: %s", c.label, c.unavailable)
	}
	return c.live, nil
}

// run is the supervisor. It returns when ctx is done, after closing the
// connection (bounded) and unregistering every tool.
func (c *client) run(ctx context.Context) {
	defer c.shutdown()
	c.begin(ctx)
	for {
		var fire <-chan time.Time
		if c.timer != nil {
			fire = c.timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-fire:
			c.timer = nil
			c.attempt(ctx, false)
		case ev := <-c.down:
			if ev.cn == c.conn {
				c.lost(ctx, ev.err)
			}
		case <-c.resync:
			c.resyncTools(ctx)
		case cn := <-c.probe:
			c.probeConn(ctx, cn)
		case <-c.ext.sync:
			c.resyncExtras(ctx)
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
	strict := first && c.cfg.FailOnStartupError
	if c.needsLogin && c.opt.oauth.Stamp() == c.loginStamp {
		// Still no new token: look again later (the poll of needLogin).
		c.timer = time.NewTimer(loginPoll)
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
		if cn != nil && !c.closeConn(cn, "failed generation") {
			return
		}
		if c.halted {
			return
		}
		if nl := (*oauth.NeedsLoginError)(nil); errors.As(err, &nl) && c.opt.oauth != nil {
			c.needLogin(ctx, first, nl)
			return
		}
		if first {
			c.log.Error(c.label+": initial connection or tool synchronization failed", "err", err)
		} else {
			c.log.Warn(c.label+": connection attempt failed", "err", err)
		}
		if strict {
			c.startErr = err
			c.setState("failed to start: "+err.Error(), "the first connection failed")
			return
		}
		if c.demandFailed(err) {
			return
		}
		c.scheduleReconnect("failed", err)
		return
	}

	c.needsLogin, c.loginTried = false, false
	// Calls may use the connection as soon as its tools are registered.
	c.conn = cn
	c.started = true
	c.connectedAt = c.opt.now()
	c.mu.Lock()
	c.live = cn
	c.mu.Unlock()
	c.setInstructions(c.capInstructions(cn.session.InitializeResult()))
	if err := c.swapLive(list); err != nil && strict {
		c.conn = nil
		c.mu.Lock()
		c.live = nil
		c.mu.Unlock()
		c.setInstructions("")
		c.startErr = err
		c.closeConn(cn, "failed generation")
		c.setState("failed: "+err.Error(), "tool registration failed")
		return
	}
	c.syncExtras(ctx, cn, syncResources|syncPrompts, true)
	if c.failed > 0 {
		c.log.Info(fmt.Sprintf("%s: reconnected and re-synced tools (attempt %d/%d)", c.label, c.failed, c.cfg.Reconnect.MaxAttempts))
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
	go func() {
		cn, list, err := c.connect(ctx)
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
	c.hung = true
	c.halt(fmt.Sprintf("a connection attempt did not finish within %s after it was abandoned", c.opt.closeTimeout),
		"reconnect stopped to avoid overlapping server processes; reload the instance or restart the host to retry")
	return nil, nil, errors.New("connection attempt abandoned")
}

// connect opens a session and lists every tool.
func (c *client) connect(ctx context.Context) (*conn, []*mcp.Tool, error) {
	cn := &conn{closed: make(chan struct{})}
	opts := &mcp.ClientOptions{
		Logger: c.log.With("component", "go-sdk"),
		// The host offers no roots.
		Capabilities: &mcp.ClientCapabilities{},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			c.extraChanged(cn, syncResources)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			c.resourceUpdated(cn, req)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			c.extraChanged(cn, syncPrompts)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.listChanged(cn)
		},
		ProgressNotificationHandler: c.onProgress,
		LoggingMessageHandler:       c.onLog,
		// Sampling is declared so that a call made through the gateway can
		// reach its client's model; other calls are refused (onSample).
		CreateMessageWithToolsHandler: c.onSample,
	}
	if c.opt.elicit != nil {
		opts.ElicitationHandler = c.onElicit
		opts.Capabilities.Elicitation = elicitCapabilities()
	}
	client := mcp.NewClient(clientInfo, opts)
	if c.opt.elicit != nil {
		client.AddSendingMiddleware(c.urlRequired)
	}
	tr := c.opt.transport()
	watched := tr
	// go-sdk reaches a Streamable HTTP connection's session hooks, which
	// open the standalone GET stream after initialize, through an
	// unexported interface no wrapper can forward: a wrapped connection
	// loses every message the server sends outside a request (a 2025-11-25
	// server's elicitation/create, list_changed). There tool tasks are
	// read in the HTTP client instead.
	if c.cfg.Transport != TransportStreamableHTTP {
		watched = c.tasks.watch(tr)
	} else {
		c.tasks.peekHTTP(tr)
	}
	session, err := client.Connect(ctx, watched, &mcp.ClientSessionOptions{ProtocolVersion: c.cfg.ProtocolVersion})
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", explainStart(ctx, tr, err))
	}
	cn.session = session
	c.watch(cn)
	c.logLevels(ctx, cn)
	list, err := listTools(ctx, session)
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

// watch reports cn's end to the supervisor.
func (c *client) watch(cn *conn) {
	c.watchers.Add(1)
	go func() {
		defer c.watchers.Done()
		err := cn.session.Wait()
		close(cn.closed)
		select {
		case c.down <- downEvent{cn, err}:
		case <-c.stopped.Done():
		}
	}()
}

// listChanged queues a re-sync for cn; notifications of a stale session are
// dropped by the loop.
func (c *client) listChanged(cn *conn) {
	c.mu.Lock()
	c.resyncFor = cn
	c.mu.Unlock()
	select {
	case c.resync <- struct{}{}:
	default:
	}
}

func (c *client) resyncTools(ctx context.Context) {
	c.mu.Lock()
	target := c.resyncFor
	c.resyncFor = nil
	c.mu.Unlock()
	if target == nil || target != c.conn || c.halted {
		return
	}
	c.log.Info(c.label + ": tool list changed, re-syncing")
	lctx, cancel := context.WithTimeout(ctx, ms(c.cfg.StartupTimeoutMs))
	defer cancel()
	list, err := listTools(lctx, target.session)
	if err != nil {
		select {
		case <-target.closed:
			// The connection ended: the supervisor reconnects and re-syncs.
		default:
			if ctx.Err() == nil {
				c.log.Error(c.label+": tool re-sync failed; keeping the previous tools", "err", err)
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
	case c.probe <- cn:
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
	if answered(err) {
		return
	}
	c.log.Warn(c.label+": the server did not answer a ping after a failed call", "err", err)
	c.lost(ctx, err)
}

// lost handles the end of the current connection.
func (c *client) lost(ctx context.Context, err error) {
	cn := c.conn
	c.conn = nil
	c.mu.Lock()
	c.live = nil
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
	if c.lostToDormant(err) {
		return
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
	c.hung = true
	if what == "" {
		c.log.Error(fmt.Sprintf("%s: connection did not close within %s during disposal — server shutdown may be incomplete", c.label, c.opt.closeTimeout))
		return false
	}
	c.halt(fmt.Sprintf("%s did not close within %s", what, c.opt.closeTimeout),
		"reconnect stopped to avoid overlapping server processes; reload the instance or restart the host to retry")
	return false
}

// halt stops reconnecting for good; tools stay registered and fail.
func (c *client) halt(why, hint string) {
	c.halted = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.log.Error(fmt.Sprintf("%s: %s — %s", c.label, why, hint))
	c.setState("stopped: "+why, why+"; "+hint)
}

// scheduleReconnect applies the reconnect policy after a lost connection
// ("lost") or a failed attempt ("failed").
func (c *client) scheduleReconnect(kind string, err error) {
	p := &c.cfg.Reconnect
	if !p.Enabled {
		c.halted = true
		if kind == "lost" {
			c.log.Error(c.label+": connection lost and reconnect is disabled — registered tools will fail until the instance is reloaded or the host restarts", "err", err)
		} else {
			c.log.Error(c.label+": connection failed and reconnect is disabled — no tools were registered; reload the instance or restart the host to connect", "err", err)
		}
		c.setState("disconnected (reconnect disabled)", "the connection was lost and reconnect is disabled; reload the instance")
		return
	}
	if !c.connectedAt.IsZero() && c.opt.now().Sub(c.connectedAt) >= ms(p.MaxDelayMs) {
		c.failed = 0
	}
	c.connectedAt = time.Time{}
	if kind == "lost" && oversized(err) {
		// A connect succeeded to get here and the server is fine: only one
		// message (often one call's answer, which fails alone) was too
		// large. The budget starts over, or a client calling such a tool
		// could make the host give the server up.
		c.failed = 0
	}
	c.failed++
	if c.failed > p.MaxAttempts {
		c.giveUp(err)
		return
	}
	delay := p.backoff(c.failed)
	verb := "connection lost; reconnecting"
	if kind == "failed" {
		verb = "connection failed; retrying"
	} else if oversized(err) {
		// The server is fine; only one message was too large to read.
		// Waiting would only keep its tools down.
		delay = 0
		verb = fmt.Sprintf("the server sent a message over the %d MiB frame limit, which drops the connection; reconnecting", frameLimitMiB)
	}
	c.log.Warn(fmt.Sprintf("%s: %s in %dms (attempt %d/%d)", c.label, verb, delay.Milliseconds(), c.failed, p.MaxAttempts), "err", err)
	if !c.started {
		c.setState(fmt.Sprintf("failed to start: %v; retry %d/%d in %s", err, c.failed, p.MaxAttempts, delay),
			fmt.Sprintf("the server failed to start (%v); retrying (attempt %d/%d)", err, c.failed, p.MaxAttempts))
	} else {
		c.setState(fmt.Sprintf("reconnecting %d/%d in %s", c.failed, p.MaxAttempts, delay),
			fmt.Sprintf("the connection is down; reconnecting (attempt %d/%d)", c.failed, p.MaxAttempts))
	}
	c.timer = time.NewTimer(delay)
}

func (c *client) giveUp(err error) {
	c.halted = true
	c.setInstructions("")
	c.unregisterAll()
	c.clearExtras()
	max := c.cfg.Reconnect.MaxAttempts
	c.log.Error(fmt.Sprintf("%s: giving up after %d consecutive failed reconnect attempts — tools unregistered; reload the instance or restart the host to reconnect", c.label, max), "err", err)
	why := err.Error()
	if !c.started {
		why = "failed to start: " + why
	}
	c.setState(fmt.Sprintf("gave up after %d attempts: %s", max, why),
		"the server could not be reached; reload the instance")
}

// shutdown runs when the scope is disposed.
func (c *client) shutdown() {
	c.stop()
	c.releaseAll()
	c.stopIdle()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.mu.Lock()
	c.live = nil
	c.unavailable = "the instance is shutting down"
	c.mu.Unlock()
	if c.conn != nil {
		c.closeConn(c.conn, "")
		c.conn = nil
	}
	c.unregisterAll()
	if !c.hung {
		// Every session is closed: their watchers are returning.
		c.watchers.Wait()
	}
	// The alarm is left armed: a call still in flight (a close that timed
	// out waits for it) keeps its timeouts, and the alarm asks for nothing
	// more once no call or release is pending.
}
