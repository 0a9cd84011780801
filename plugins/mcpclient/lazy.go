package mcpclient

// Lazy start, idle shutdown and the first attempt nobody waits for.
//
// startup: lazy registers the cached tools and instructions (toolset's
// catalog) and leaves the server dormant ("lazy, idle (12 tools cached)").
// The supervisor owns every start: a call on a dormant server (acquire)
// asks it for one and waits, bounded by startupTimeoutMs, on the pending
// start, which concurrent calls share; a failed start leaves it dormant for
// the next call, and so does a lost connection (no reconnect in the
// background). A call on a tool the live list no longer has is refused,
// naming it. With no cache, a lazy server connects in the background like
// an eager one whose Apply does not wait, and declares its tools still to
// come until that first attempt ends: a one-shot command waits for them,
// and the list it gets is written to the cache.
//
// idleTimeoutMs: the supervisor stops a connection no call held for that
// long (a call in flight or a resource subscription holds it), closes it
// like any generation and keeps the tools: "stopped after idle (12
// tools)"; the next call starts it.
//
// An eager server's Apply waits for the first attempt for at most
// startupTimeoutMs. Past it the instance is active ("starting: no answer
// within startupTimeoutMs (...); still trying in the background") and the
// attempt goes on, bounded by backgroundStartFactor times
// startupTimeoutMs, then the reconnect policy. failOnStartupError keeps the
// strict start: no cache, the instance fails with the attempt.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// Startup modes a Config may name.
const (
	StartupEager = "eager"
	StartupLazy  = "lazy"
)

// backgroundStartFactor bounds a first connection attempt that nobody
// waits for any more (an eager server past its startupTimeoutMs, or a lazy
// one with no catalog cache): it may take this many startupTimeoutMs
// before it counts as failed, so that a server slower than the timeout
// still comes up, while one that never answers is retried in the end.
const backgroundStartFactor = 10

// lazyState is the client's part for lazy start, idle shutdown and the
// catalog cache.
//
// A server is dormant when it has no connection and no retry is planned,
// but a call may start it: a lazy server before its first call, any
// server stopped after idleTimeoutMs, a lazy server whose start failed or
// whose connection was lost. A call on a dormant server asks the
// supervisor to start it (wake) and waits on the pending start; concurrent
// calls wait on the same one, so the server starts once.
type lazyState struct {
	// Owned by the run goroutine.
	onDemand   bool  // the attempt running is a call's start
	background bool  // the attempt running is the first, unwaited-for
	lastErr    error // the last attempt's failure
	idle       *time.Timer

	// readyHold ends the hold on the host's readiness of an eager server
	// retrying its first connection (readyhold.go); nil when none.
	readyHold func()

	wake      chan struct{} // a call wants a start, cap 1
	readyOnce sync.Once

	// Guarded by client.mu.
	pending *startRun
	dormant bool
	inUse   int       // calls holding the connection
	lastUse time.Time // when the last call ended, or the connection came

	detailMu   sync.Mutex
	lastDetail string
}

// startRun is one start that calls wait for; err is set before done closes.
type startRun struct {
	done chan struct{}
	err  error
}

func (c *client) lazy() bool { return c.opt.cfg.Startup == StartupLazy }

// validateStartup checks startup and idleTimeoutMs, naming each key.
func (cfg *Config) validateStartup() []error {
	var errs []error
	switch cfg.Startup {
	case "", StartupEager:
	case StartupLazy:
		if cfg.FailOnStartupError {
			errs = append(errs, host.KeyErrorf("failOnStartupError", "applies to startup eager only: a lazy server starts on its first call; remove it or set startup: eager"))
		}
	default:
		errs = append(errs, host.KeyErrorf("startup", "%q must be eager or lazy", cfg.Startup))
	}
	if cfg.IdleTimeoutMs < 0 || cfg.IdleTimeoutMs > maxMs {
		errs = append(errs, host.KeyErrorf("idleTimeoutMs", "must be 0 (never stop an idle server) or a positive number no greater than %d", maxMs))
	}
	return errs
}

// publish sets the instance's detail; detailMu orders it against the
// startup timer's (pastStartupTimeout).
func (c *client) publish(detail string) {
	c.mu.Lock()
	dormant := c.lz.dormant
	c.mu.Unlock()
	c.lz.detailMu.Lock()
	c.lz.lastDetail = detail
	c.opt.detail(detail)
	if c.opt.scope != nil {
		// Every change of dormant is followed by a new detail.
		c.opt.scope.SetDormant(dormant)
	}
	c.lz.detailMu.Unlock()
}

// lastError publishes the failure the client retries or waits out
// (InstanceStatus.LastError), nil once it connected.
func (c *client) lastError(err error) {
	if c.opt.scope == nil {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.opt.scope.SetLastError(msg)
}

// markReady lets start (the instance's Apply) return.
func (c *client) markReady() { c.lz.readyOnce.Do(func() { close(c.first.ready) }) }

// begin is the supervisor's start: a lazy server with a catalog cache
// registers its tools from it and waits for a call; every other server
// connects now. Apply waits for that first attempt only when the server is
// eager, and then no longer than startupTimeoutMs unless
// failOnStartupError holds it to the attempt's outcome: past it the
// attempt goes on in the background and the tools come when it succeeds
// (at once from the cache, when there is one).
func (c *client) begin(ctx context.Context) {
	strict := c.opt.cfg.FailOnStartupError
	cached := false
	if !strict {
		var instructions string
		if instructions, cached = c.tools.FromCatalog(); cached {
			c.setInstructions(instructions)
		}
		c.revision = c.tools.Protocol()
	} else {
		c.revision = c.tools.ReadProtocol()
	}
	if c.lazy() && cached {
		c.mu.Lock()
		c.lz.dormant = true
		c.mu.Unlock()
		c.setState(fmt.Sprintf("lazy, idle (%s cached)", toolCount(c.tools.Len())), "")
		c.bridge.Dormant()
		c.reportReady()
		c.markReady()
		return
	}
	began := time.Now()
	c.mu.Lock()
	c.lz.pending = &startRun{done: make(chan struct{})}
	c.mu.Unlock()
	if !strict {
		c.lz.background = true
		if c.lazy() {
			// Active at once, with its tools still to come: a one-shot
			// command waits for them (tools.Registry.WaitStarted).
			done := c.opt.registry.Starting(c.opt.scope)
			defer done()
			c.markReady()
		} else {
			cachedTools := c.tools.Len()
			// "connecting" before the timer is armed: a timer that fired
			// before the attempt said so would find another detail and
			// leave Apply waiting for the whole attempt.
			c.setState("connecting", "the server is still connecting")
			stop := time.AfterFunc(ms(c.opt.cfg.StartupTimeoutMs), func() { c.pastStartupTimeout(cachedTools) })
			defer stop.Stop()
		}
	}
	c.attempt(ctx, true)
	c.lz.background = false
	c.holdWhileRetrying(began)
	c.resolveStart()
	c.markReady()
}

// pastStartupTimeout lets Apply return while the first attempt goes on,
// and says so in the detail. An attempt that moved the detail on is
// either about to end or waits for a person's login in the browser, which
// Apply waits for as it always did.
func (c *client) pastStartupTimeout(cached int) {
	c.lz.detailMu.Lock()
	connecting := c.lz.lastDetail == "connecting"
	if connecting {
		c.lz.lastDetail = fmt.Sprintf("starting: no answer within startupTimeoutMs (%dms); still trying in the background", c.opt.cfg.StartupTimeoutMs)
		if cached > 0 {
			c.lz.lastDetail += fmt.Sprintf(" (%s cached)", toolCount(cached))
		}
		c.opt.detail(c.lz.lastDetail)
	}
	c.lz.detailMu.Unlock()
	if connecting {
		c.markReady()
	}
}

// attemptTimeout bounds the attempt about to run, and names the bound for
// its error.
func (c *client) attemptTimeout() (time.Duration, string) {
	d := ms(c.opt.cfg.StartupTimeoutMs)
	if !c.lz.background {
		return d, fmt.Sprintf("startupTimeoutMs (%dms)", c.opt.cfg.StartupTimeoutMs)
	}
	return backgroundStartFactor * d, fmt.Sprintf("%d × startupTimeoutMs (%dms) in the background", backgroundStartFactor, c.opt.cfg.StartupTimeoutMs)
}

// resolveStart ends the pending start, if any: its waiters take the live
// connection, or the failure.
func (c *client) resolveStart() {
	c.mu.Lock()
	p := c.lz.pending
	c.lz.pending = nil
	var err error
	if c.shared.live == nil {
		switch {
		case c.lz.lastErr != nil && c.retry.started && !c.lz.onDemand:
			// Waiters for a reconnect (dropped.go).
			err = fmt.Errorf("%s: not connected: %s; the last attempt failed: %w", c.label, c.shared.unavailable, c.lz.lastErr)
		case c.lz.lastErr != nil:
			err = fmt.Errorf("%s: failed to start: %w", c.label, c.lz.lastErr)
		default:
			err = fmt.Errorf("%s: not connected: %s", c.label, c.shared.unavailable)
		}
	}
	c.mu.Unlock()
	if p != nil {
		p.err = err
		close(p.done)
	}
}

// acquire returns the connection for a request, starting a dormant server
// and waiting (bounded by startupTimeoutMs and ctx) for a start underway.
// raw, when set, is the tool to call: one the live server no longer lists
// (a cached tool it dropped) is refused clearly. done ends the use, for
// the idle timer.
func (c *client) acquire(ctx context.Context, raw string) (cn *conn, done func(), err error) {
	var timeout <-chan time.Time
	c.mu.Lock()
	for {
		if c.shared.live != nil {
			if raw != "" && !c.tools.Listed(raw) {
				c.mu.Unlock()
				return nil, nil, fmt.Errorf("%s: tool %q is not in the server's current tool list (its registration came from the catalog cache or an earlier list, and is removed now)", c.label, raw)
			}
			cn = c.shared.live
			if c.opt.cfg.IdleTimeoutMs <= 0 {
				// Nothing counts uses: the call path stays as cheap as
				// before idleTimeoutMs existed.
				c.mu.Unlock()
				return cn, noUse, nil
			}
			c.lz.inUse++
			c.mu.Unlock()
			return cn, c.endUse, nil
		}
		p := c.lz.pending
		if p == nil {
			if !c.lz.dormant {
				err := fmt.Errorf("%s: not connected: %s", c.label, c.shared.unavailable)
				c.mu.Unlock()
				return nil, nil, err
			}
			p = &startRun{done: make(chan struct{})}
			c.lz.pending = p
			select {
			case c.lz.wake <- struct{}{}:
			default:
			}
		}
		// A waiter holds the server in use: the idle timer may not stop
		// it between the start and the call.
		c.lz.inUse++
		c.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(ms(c.opt.cfg.StartupTimeoutMs))
			defer t.Stop()
			timeout = t.C
		}
		var err error
		select {
		case <-p.done:
			err = p.err
		case <-ctx.Done():
			err = fmt.Errorf("%s: while the server was starting: %w", c.label, ctx.Err())
		case <-timeout:
			err = fmt.Errorf("%s: the server did not start within startupTimeoutMs (%dms); it goes on starting: %w",
				c.label, c.opt.cfg.StartupTimeoutMs, context.DeadlineExceeded)
		case <-c.shut.ctx.Done():
			err = fmt.Errorf("%s: not connected: the instance is shutting down", c.label)
		}
		c.mu.Lock()
		c.lz.inUse--
		if err != nil {
			c.mu.Unlock()
			return nil, nil, err
		}
	}
}

func noUse() {}

// endUse ends a use that acquire began.
func (c *client) endUse() {
	c.mu.Lock()
	c.lz.inUse--
	c.lz.lastUse = time.Now()
	c.mu.Unlock()
}

// startOnDemand runs on the supervisor when a call asked for a start.
func (c *client) startOnDemand(ctx context.Context) {
	c.mu.Lock()
	waiting, dormant := c.lz.pending != nil, c.lz.dormant
	if c.retry.halted {
		c.lz.dormant = false
	}
	c.mu.Unlock()
	if !waiting {
		return
	}
	if c.conn != nil || !dormant || c.retry.halted {
		c.resolveStart()
		return
	}
	c.setState("starting", "the server is starting")
	c.lz.onDemand, c.lz.lastErr = true, nil
	// attempt resolves the waiters' start itself. Resolving again here
	// would hand a call that came since, and asked for a start of its
	// own, this attempt's failure without any attempt.
	c.attempt(ctx, false)
	c.lz.onDemand = false
	if c.conn != nil {
		c.mu.Lock()
		c.lz.dormant = false
		c.mu.Unlock()
	}
}

// demandFailed handles a failed start a call asked for: no retry, the
// server stays dormant and the next call tries again. It reports whether
// it did.
func (c *client) demandFailed(err error) bool {
	if !c.lz.onDemand {
		return false
	}
	c.setState("failed to start: "+err.Error()+"; the next call tries again", "the server failed to start: "+err.Error())
	return true
}

// lostToDormant handles a lost connection of a lazy server: no reconnect
// in the background; the next call starts it again. It reports whether it
// did.
func (c *client) lostToDormant(err error) bool {
	if !c.lazy() {
		return false
	}
	c.stopIdle()
	c.mu.Lock()
	c.lz.dormant = true
	c.mu.Unlock()
	c.opt.logger.Warn(c.label+": connection lost; the next call starts the server again", "err", err)
	c.setState(fmt.Sprintf("stopped: connection lost (%v); the next call starts it again (%s)", err, toolCount(c.tools.Len())), "")
	return true
}

// connected runs after each successful connection: the start's waiters
// may go, and the idle timer starts.
func (c *client) connected() {
	c.mu.Lock()
	c.lz.dormant = false
	c.lz.lastUse = time.Now()
	c.mu.Unlock()
	c.lz.lastErr = nil
	c.lastError(nil)
	c.releaseReadyHold()
	c.stopIdle()
	if c.opt.cfg.IdleTimeoutMs > 0 {
		c.lz.idle = time.NewTimer(ms(c.opt.cfg.IdleTimeoutMs))
	}
}

func (c *client) stopIdle() {
	if c.lz.idle != nil {
		c.lz.idle.Stop()
		c.lz.idle = nil
	}
}

// idleC is the idle timer's channel, nil when none runs.
func (c *client) idleC() <-chan time.Time {
	if c.lz.idle == nil {
		return nil
	}
	return c.lz.idle.C
}

// idleCheck stops the server if no call used it for idleTimeoutMs, and
// arms the timer again otherwise. Its tools and instructions stay: the
// next call starts it again. A server holding resource subscriptions is
// in use.
func (c *client) idleCheck() {
	c.lz.idle = nil
	if c.conn == nil || c.retry.halted {
		return
	}
	limit := ms(c.opt.cfg.IdleTimeoutMs)
	subscribed := c.bridge.Subscribed()
	c.mu.Lock()
	unused := time.Since(c.lz.lastUse)
	if c.lz.inUse > 0 || subscribed || unused < limit {
		c.mu.Unlock()
		wait := limit
		if c.lz.inUse == 0 && !subscribed {
			wait = limit - unused
		}
		c.lz.idle = time.NewTimer(wait)
		return
	}
	cn := c.conn
	c.shared.live = nil
	c.lz.dormant = true
	c.mu.Unlock()
	c.conn = nil
	if !c.closeConn(cn, "idle generation") {
		return
	}
	c.opt.logger.Info(fmt.Sprintf("%s: stopped after idleTimeoutMs (%dms) unused; the next call starts it again", c.label, c.opt.cfg.IdleTimeoutMs))
	c.setState(fmt.Sprintf("stopped after idle (%s)", toolCount(c.tools.Len())), "")
}

func toolCount(n int) string {
	if n == 1 {
		return "1 tool"
	}
	return fmt.Sprintf("%d tools", n)
}

// swapLive registers a live server's list, and rewrites the catalog cache
// with the instructions it has now when it changed.
func (c *client) swapLive(list []*mcp.Tool) error {
	c.mu.Lock()
	instructions := c.shared.instructions
	c.mu.Unlock()
	return c.tools.SwapLive(list, instructions)
}
