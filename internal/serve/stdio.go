package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
)

// Stdio runs the host for serve --stdio, serving one session on in and
// out: the session starts as soon as the gateway is up, while the rest of
// the composition is still starting (a client gives its server little
// time to answer initialize, and the gateway announces what comes later).
// problem, if not empty, is what is wrong with the composition: c is then
// empty, and the session says so until an edit of the file loads. It
// returns when the client goes away, ctx ends, or a reload restarts the
// gateway (the client must reconnect: an error).
func Stdio(ctx context.Context, c *host.Composition, cfg Config, problem string, in io.Reader, out io.Writer) (err error) {
	h := host.New(cfg.Host)
	if cfg.Setup != nil {
		cfg.Setup(h)
	}
	id, file, logger := cfg.GatewayID, cfg.File, cfg.Logger
	starting, stopStarting := context.WithCancel(ctx)
	var stopStarted func()
	started := make(chan struct{})
	go func() {
		defer close(started)
		// Update returns when every instance has settled, or at once
		// when serve ends first.
		if err := h.Update(starting, c); err != nil {
			if starting.Err() == nil {
				logger.Error("the composition did not start", "file", file, "err", err)
			}
			return
		}
		if st := host.Find(h.Status(), id); st.State == host.StatePending {
			logger.Warn("the gateway waits for a service; see the host's status above, or run dsh-host check", "entry", id, "waiting", st.Err)
		}
		if cfg.Started != nil {
			stopStarted = cfg.Started(starting, h)
		}
	}()
	defer func() {
		stopStarting()
		<-started
		if stopStarted != nil {
			stopStarted()
		}
		if !cfg.Shutdown(h) && err == nil {
			err = ErrLogged
		}
	}()
	// The composition has started once every entry of it has settled
	// (the first update may not have added them all yet, and an entry
	// waits on its services before it starts: pending, for a moment).
	unsettled := func(state host.State) bool {
		return state == "" || state == host.StateStarting || state == host.StatePending
	}
	settled := func(st []host.InstanceStatus) bool {
		select {
		case <-started:
			return true
		default:
		}
		for _, e := range c.Entries {
			if !e.Disabled && unsettled(host.Find(st, e.ID).State) {
				return false
			}
		}
		return !slices.ContainsFunc(st, func(s host.InstanceStatus) bool { return s.State == host.StateStarting })
	}
	return session(ctx, h, started, settled, id, file, problem, in, out, logger)
}

// followProblems tells g's clients what is wrong with the composition as
// the watcher finds it (after problem, set already), until ctx ends: a file that
// does not load, and an edit not applied; a load clears it.
func followProblems(ctx context.Context, h *host.Host, g *gateway.Gateway, file, problem string) {
	running := problem == ""
	seen := h.Reloads()
	for {
		var now host.ReloadStats
		err := h.WaitStatus(ctx, func([]host.InstanceStatus) bool {
			now = h.Reloads()
			return now.Applied != seen.Applied || now.Failed != seen.Failed
		})
		if err != nil {
			return
		}
		seen = now
		switch {
		case now.LastError != nil:
			g.SetProblem(NotApplied(file, now.LastError, running))
		default:
			running = true
			g.SetProblem("")
		}
	}
}

// session serves one client on in and out, on the gateway instance
// id provides, until the client closes its end, ctx is done, or the
// instance is disposed (a reload restarted it: the client must reconnect).
// A pending gateway is waited for, unless a reload fails, disables or
// removes it first.
func session(ctx context.Context, h *host.Host, started <-chan struct{}, settled func([]host.InstanceStatus) bool, id, file, problem string, in io.Reader, out io.Writer, logger *slog.Logger) error {
	// A pending gateway may come up, or a reload may fail, disable or
	// remove it meanwhile: then there is nothing left to wait for.
	var g *gateway.Gateway
	var last host.InstanceStatus
	err := h.WaitStatus(ctx, func(st []host.InstanceStatus) bool {
		var ok bool
		if g, ok = host.Lookup(h, gateway.Key); ok {
			return true
		}
		last = host.Find(st, id)
		switch last.State {
		case host.StateFailed, host.StateDisabled:
			return true
		case "":
			// Not there yet while the first update is planning; gone
			// after it.
			select {
			case <-started:
				return true
			default:
			}
		}
		return false
	})
	if err != nil || ctx.Err() != nil {
		// Stopped while waiting (a stop that came first may also have
		// shut the composition down, which looks like a removal).
		return nil
	}
	if g == nil {
		why := "was removed"
		switch last.State {
		case host.StateFailed:
			why = "failed: " + last.Err
		case host.StateDisabled:
			why = "was disabled"
		}
		return fmt.Errorf("the gateway (entry %q in %s) %s while serve waited for it; the stdio session never started", id, file, why)
	}
	// The servers connecting with the composition have a moment to be
	// listed, so that the client's first lists have them; one that takes
	// longer comes with a list_changed (the client's initialize waits in
	// the pipe meanwhile).
	wait, stopWaiting := context.WithTimeout(ctx, gateway.StartupWait)
	_ = h.WaitStatus(wait, settled)
	stopWaiting()
	// The session ends when the client goes away, when the gateway is
	// closed (which ends its sessions), or at SIGINT: then serve closes the
	// gateway itself, before the host's shutdown would, because go-sdk's
	// session Close waits for the requests in flight, and a tool that runs
	// until cancelled would hold serve forever; closing the gateway cancels
	// them.
	session, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			g.Close()
		case <-g.Done():
		case <-session.Done():
		}
		cancel()
	}()
	g.SetProblem(problem) // before the client's initialize
	problems := make(chan struct{})
	go func() {
		defer close(problems)
		followProblems(session, h, g, file, problem)
	}()
	defer func() {
		cancel()
		<-watched
		<-problems
	}()

	t := &mcp.IOTransport{Reader: readCloser(in), Writer: nopWriteCloser{out}}
	logger.Info("serving MCP over stdio", "entry", id)
	err = g.Server().Run(session, t)
	select {
	case <-g.Done():
		if ctx.Err() == nil {
			return fmt.Errorf("a reload stopped the gateway (entry %q in %s, or a service it injects, changed): the stdio session has ended; the client must reconnect", id, file)
		}
	default:
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.EOF) {
		logger.Error("the stdio session ended with an error", "err", err)
		return ErrLogged
	}
	if ctx.Err() != nil {
		logger.Info("shutting down the gateway")
	} else {
		logger.Info("stdio client gone; shutting down")
	}
	return nil
}
