package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultReadyTimeout bounds the wait for an instance that reports its
// readiness when Options.ReadyTimeout is zero.
const DefaultReadyTimeout = 2 * time.Minute

// DefaultDrainTimeout bounds the calls in flight a replaced instance is
// left to finish when Options.DrainTimeout is zero.
const DefaultDrainTimeout = 30 * time.Second

// keptPrefix starts InstanceStatus.Kept.
const keptPrefix = "kept the previous config: the new one failed: "

// readiness is what an instance said of itself after Apply: ready (err
// nil) or failed. Only the first word counts.
type readiness struct {
	once sync.Once
	done chan struct{}
	err  error // set before done closes
}

// Ready says the instance is ready: what it serves is in place (an MCP
// client's tools are registered). For a plugin with ReportsReady, the host
// waits for Ready or Fail before it counts the instance as started; a
// plugin without it need not call either. Only the first Ready or Fail of
// a scope counts; Ready during Apply takes effect when Apply returns.
func (s *Scope) Ready() { s.settleReady(nil) }

// Fail says the instance could not get ready, and why (a server that does
// not answer within its startup timeout). A changed entry then keeps, or
// gets back, its previous config. Only the first Ready or Fail counts.
func (s *Scope) Fail(err error) {
	if err == nil {
		err = errors.New("failed (the plugin gave no reason)")
	}
	s.settleReady(err)
}

func (s *Scope) settleReady(err error) {
	s.ready.once.Do(func() {
		s.ready.err = err
		close(s.ready.done)
	})
}

// Staged reports whether what s registers must stay invisible for now: s
// is the new instance of an edited entry, started beside the one it
// replaces (Definition.Overlap), and is not ready yet. A registry holds a
// staged scope's registrations back (they may take the names those of
// Replaces hold) and makes them visible in one step from OnLive.
func (s *Scope) Staged() bool { return s.staged.Load() }

// Replaces returns the scope of the instance s was started beside and
// replaces once ready, or nil.
func (s *Scope) Replaces() *Scope { return s.replaces }

// Retired reports whether s was replaced by a newer instance of its entry
// and only finishes its calls in flight before it is disposed.
func (s *Scope) Retired() bool { return s.retired.Load() }

// Serving reports whether what s registers is what its entry serves: s is
// neither staged nor retired (replaced, finishing its calls in flight). A
// plugin's contribution that no registry stages (an assemble handler)
// stands back while its scope is not serving.
func (s *Scope) Serving() bool { return !s.staged.Load() && !s.retired.Load() }

// OnLive registers fn to run when the staged s goes live: the host runs
// every fn of s, in registration order, as the one step that swaps the
// entry over to s; a registry moves s's staged registrations in there,
// replacing those of Replaces. Registered once s is live (or on a scope
// that never was staged), fn runs at once.
func (s *Scope) OnLive(fn func()) {
	s.mu.Lock()
	if !s.staged.Load() {
		s.mu.Unlock()
		fn()
		return
	}
	s.onLive = append(s.onLive, fn)
	s.mu.Unlock()
}

// goLive runs the OnLive funcs of s, then marks s live. A registration
// made in between still sees Staged and calls OnLive, which then runs at
// once: nothing staged is left behind.
func (s *Scope) goLive() {
	for {
		s.mu.Lock()
		list := s.onLive
		s.onLive = nil
		if len(list) == 0 {
			s.staged.Store(false)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for _, fn := range list {
			fn()
		}
	}
}

// closingBit marks Scope.calls once the scope takes no more calls.
const closingBit = 1 << 62

// Enter counts a call into the instance until Leave, so that an instance
// replaced by an overlapping one is disposed only once its calls in flight
// have ended. It reports false, counting nothing, once the instance takes
// no more calls (replaced, or being disposed): the caller looks the name
// up again and finds the instance that replaced it. A registry calls Enter
// and Leave around each call it dispatches to a registration; neither
// allocates.
func (s *Scope) Enter() bool {
	if s.calls.Add(1)&closingBit != 0 {
		s.Leave()
		return false
	}
	return true
}

// Leave ends a call Enter counted.
func (s *Scope) Leave() {
	if s.calls.Add(-1) == closingBit { // the last call out of a closing scope
		if ch := s.idle.Load(); ch != nil {
			select {
			case *ch <- struct{}{}:
			default:
			}
		}
	}
}

// drain refuses new calls, then waits, at most timeout or until ctx ends,
// for those in flight to end. It reports how many were still in flight
// when it gave up.
func (s *Scope) drain(ctx context.Context, timeout time.Duration) int64 {
	ch := make(chan struct{}, 1)
	s.idle.Store(&ch) // before closing: a Leave that sees closing finds it
	s.calls.Or(closingBit)
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		n := s.calls.Load() &^ closingBit
		if n == 0 {
			return 0
		}
		select {
		case <-ch:
		case <-t.C:
			return n
		case <-ctx.Done():
			return n
		}
	}
}

// waitReady waits for s to say it is ready, when its plugin reports
// readiness, bounded by Options.ReadyTimeout and by s's context (which
// Shutdown cancels).
func (h *Host) waitReady(p *plugin, s *Scope) error {
	if !p.reportsReady {
		return nil
	}
	t := time.NewTimer(h.opts.ReadyTimeout)
	defer t.Stop()
	select {
	case <-s.ready.done:
		return s.ready.err
	case <-t.C:
		return fmt.Errorf("not ready within %s after it started", h.opts.ReadyTimeout)
	case <-s.ctx.Done():
		return fmt.Errorf("not ready: %w", s.ctx.Err())
	}
}

// readyNow says what s has said of its readiness so far, without
// waiting: its failure, or pending when it said nothing yet.
func readyNow(p *plugin, s *Scope) (pending bool, err error) {
	if !p.reportsReady {
		return false, nil
	}
	select {
	case <-s.ready.done:
		return false, s.ready.err
	default:
		return true, nil
	}
}

// startBeside starts the changed entry in's new config as a staged run
// beside the serving one (Definition.Overlap). Once the new run is ready
// its registrations replace the old run's in one step (goLive), the
// claims move to it, and the old run is retired: disposed once its calls
// in flight end. A new run that fails is disposed and the old one keeps
// serving, untouched.
func (h *Host) startBeside(in *instance) {
	h.mu.Lock()
	old := in.scope
	seen := h.seenLocked(in)
	h.lastRun++
	run := h.lastRun
	s := newScope(h.base, in.entry.ID, h.log, in)
	s.injected = old.injected // the same providers: a change of provider restarts the instance instead
	s.replaces = old
	s.staged.Store(true)
	in.next = s
	cfg, entry := in.cfg, in.entry
	in.cfg, in.fallback, in.notReady = nil, nil, ""
	h.mu.Unlock()

	begin := time.Now()
	err := h.runApply(in, s, &entry, cfg)
	if err == nil {
		err = h.waitReady(in.plugin, s)
	}
	if err != nil {
		s.Dispose(h.opts.DisposeTimeout)
		h.mu.Lock()
		in.next = nil
		closed := h.closed
		if !closed {
			in.kept = keptPrefix + err.Error()
			h.noteLocked(in)
		}
		h.unlockNotify()
		if !closed {
			h.log.Warn("new config failed; the previous one keeps running", "instance", in.entry.ID, "plugin", in.plugin.name, "err", err)
		}
		return
	}

	s.goLive()
	h.mu.Lock()
	for _, c := range s.moved {
		if h.claims[c] == old {
			h.claims[c] = s
		}
	}
	in.scope, in.last, in.run, in.next, in.seen = s, s, run, nil, seen
	in.kept = ""
	in.readyEntry = &entry
	old.retired.Store(true)
	old.calls.Or(closingBit) // from now on calls find the new run
	in.since = time.Now()
	h.noteLocked(in)
	h.wg.Go(func() { h.retire(old) })
	h.unlockNotify()
	h.log.Debug("instance swapped to its new config", "instance", in.entry.ID, "plugin", in.plugin.name, "took", time.Since(begin))
}

// retire disposes a replaced run once its calls in flight have ended,
// bounded by Options.DrainTimeout (and cut short by Shutdown).
func (h *Host) retire(old *Scope) {
	if left := old.drain(h.base, h.opts.DrainTimeout); left > 0 && h.base.Err() == nil {
		h.log.Warn("replaced instance disposed with calls still in flight", "instance", old.id, "calls", left, "drainTimeout", h.opts.DrainTimeout)
	}
	if err := old.Dispose(h.opts.DisposeTimeout); err != nil {
		h.log.Warn("dispose of replaced instance incomplete", "instance", old.id, "err", err)
	}
}

// noteLocked queues an OnStatus delivery of in's status when something
// other than its state changed (Kept), and wakes WaitStatus.
func (h *Host) noteLocked(in *instance) {
	h.notes = append(h.notes, in.statusLocked())
	h.touchLocked()
}

// watchLateReady records, for a run that was not ready when the host
// stopped waiting, the moment it becomes ready: its config is then the
// one a later failed edit keeps.
func (h *Host) watchLateReady(in *instance, s *Scope, entry Entry) {
	h.wg.Go(func() {
		select {
		case <-s.ready.done:
		case <-s.ctx.Done():
			return
		}
		if s.ready.err != nil {
			return
		}
		h.mu.Lock()
		if in.scope == s {
			in.readyEntry = &entry
			in.notReady = ""
		}
		h.mu.Unlock()
	})
}
