package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// DefaultListWait bounds, unless Config.ListWait says otherwise, how long
// after the gateway's start its lists wait for the servers starting with
// it: agent CLIs list tools once, right after initialize, and some
// (Codex) never list again.
const DefaultListWait = 5 * time.Second

// startup is what the gateway knows of the composition starting with it:
// whether the servers it waits for are there, and whether the surface it
// serves has caught up with the registry.
type startup struct {
	scope    *host.Scope
	born     time.Time
	listWait time.Duration
	// over: the lists no longer wait (the composition has started, or
	// listWait has passed).
	over atomic.Bool
	// ready: Readiness said ready once, and says so from then on.
	ready atomic.Bool
	// synced is the registry's Changes the served tools were assembled
	// after; assembleErr, when set, is why the last assembly failed.
	synced      atomic.Uint64
	assembleErr atomic.Pointer[error]
}

func (st *startup) init(s *host.Scope, listWait time.Duration) {
	st.scope, st.born, st.listWait = s, time.Now(), listWait
	if st.listWait <= 0 {
		st.listWait = DefaultListWait
	}
}

// behind reports whether the served tools may lack a change the registry
// made: a sync is due, or running.
func (g *Gateway) behind() bool {
	return g.stale.Load() || g.startup.synced.Load() != g.reg.Changes()
}

// catchUp brings the served tools in line with the registry, unless they
// are by the time a sync running now ends.
func (g *Gateway) catchUp(ctx context.Context) error {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	if !g.behind() {
		return nil
	}
	return g.syncLocked(ctx)
}

// holdLists is a receiving middleware: while the composition starts, a
// list (tools, resources, templates, prompts) waits until every eager
// server has connected (or failed, or passed its own startupTimeoutMs)
// and every lazy server without a catalog cache has listed its tools,
// at most until listWait after the gateway's start; then it is answered
// with what is there, and what comes later comes with list_changed. An
// agent CLI's first list, made right after initialize on a cold start,
// then holds the servers. initialize is not held: a client gives a server
// little time to answer it.
//
// What the gateway waits for are typed contracts, not status text: the
// host's readiness (Scope.WaitReadiness: the first composition applied,
// no instance of it starting) and the tool registry's instances with
// tools still to come (tools.Registry.WaitStarted).
func (g *Gateway) holdLists(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if _, ok := listKind(method); ok && !g.startup.over.Load() {
			g.waitStartup(ctx)
		}
		return next(ctx, method, req)
	}
}

// waitStartup waits for the composition to have started, bounded by the
// gateway's listWait and by ctx.
func (g *Gateway) waitStartup(ctx context.Context) {
	st := &g.startup
	until := st.born.Add(st.listWait)
	if !time.Now().Before(until) {
		st.over.Store(true)
		return
	}
	wctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	// holdLists runs before endWithGateway: a Close, which waits for the
	// requests in flight, ends the wait here.
	defer context.AfterFunc(g.ctx, cancel)()
	if err := st.scope.WaitReadiness(wctx); err != nil {
		g.waitedInVain(ctx, err)
		return
	}
	if err := g.reg.WaitStarted(wctx); err != nil {
		g.waitedInVain(ctx, err)
		return
	}
	st.over.Store(true)
}

// waitedInVain ends the wait of the lists for good once listWait has
// passed (not when only the client gave up), and says what is still
// awaited.
func (g *Gateway) waitedInVain(ctx context.Context, err error) {
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if g.startup.over.Swap(true) {
		return
	}
	_, why := g.startingNow()
	g.logger.Info("gateway: lists answered without the servers still starting; they come with list_changed", "listWait", g.startup.listWait, "awaited", why)
}

// startingNow reports whether the composition is still starting, and what
// it waits for.
func (g *Gateway) startingNow() (bool, string) {
	if ok, why := g.startup.scope.Readiness(); !ok {
		return true, why
	}
	if ids := g.reg.StillStarting(); len(ids) > 0 {
		return true, "listing the tools of " + someOf(ids, 3) + " (no catalog cache)"
	}
	return false, ""
}

// Readiness reports whether the gateway serves the whole surface of the
// composition it started with, for /readyz: the host's readiness (the
// composition applied, every entry started, no eager server still
// connecting, nor retrying a failed first connection within its
// startupTimeoutMs), every lazy
// server's catalog listed, and the served tools, resources and prompts
// caught up with them. Once ready, it stays so, like the host's: a reload
// must not take every replica out of its load balancer at once.
func (g *Gateway) Readiness() (bool, string) {
	st := &g.startup
	if st.ready.Load() {
		return true, ""
	}
	if starting, why := g.startingNow(); starting {
		return false, why
	}
	if p := st.assembleErr.Load(); p != nil {
		return false, "the tool surface does not assemble: " + (*p).Error()
	}
	if g.behind() {
		return false, "the served tools are being updated"
	}
	if g.bridge.behind() {
		return false, "the served resources and prompts are being updated"
	}
	st.ready.Store(true)
	return true, ""
}

// someOf joins the first n of ids, and says how many more there are: a
// reason stays one short line with a thousand entries starting.
func someOf(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}
