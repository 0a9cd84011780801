package host

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Status returns a snapshot of every instance, in composition order.
func (h *Host) Status() []InstanceStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.statusLocked()
}

func (h *Host) statusLocked() []InstanceStatus {
	out := make([]InstanceStatus, len(h.order))
	for i, in := range h.order {
		out[i] = in.statusLocked()
	}
	return out
}

func (in *instance) statusLocked() InstanceStatus {
	st := InstanceStatus{ID: in.entry.ID, Plugin: in.entry.Name, State: in.state, Since: in.since, Err: in.err, Kept: in.kept}
	if in.last != nil {
		st.Detail = in.last.Detail()
	}
	in.addFacts(&st)
	return st
}

// OnStatus calls fn whenever an instance changes state. The returned func
// removes fn. Calls are made one at a time, in the order of the changes;
// fn must not call Apply or Shutdown.
func (h *Host) OnStatus(fn func(InstanceStatus)) (remove func()) {
	return h.statusHooks.add(nil, "", fn)
}

// WaitStatus blocks until cond holds for a Status snapshot (it is checked
// now and after every change, Scope.SetDetail included) or ctx is done.
// Tests and commands use it to wait for a reload's effect without polling:
//
//	err := h.WaitStatus(ctx, func(st []host.InstanceStatus) bool {
//		return host.Find(st, "github").State == host.StateActive
//	})
func (h *Host) WaitStatus(ctx context.Context, cond func([]InstanceStatus) bool) error {
	for {
		h.mu.Lock()
		st := h.statusLocked()
		ch := h.changed
		h.mu.Unlock()
		if cond(st) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for status: %w (status now: %s)", ctx.Err(), formatStatus(st))
		}
	}
}

// Find returns the instance id in a Status snapshot, or a zero
// InstanceStatus (State "") when there is none.
func Find(st []InstanceStatus, id string) InstanceStatus {
	for _, s := range st {
		if s.ID == id {
			return s
		}
	}
	return InstanceStatus{}
}

func formatStatus(st []InstanceStatus) string {
	var b []byte
	for i, s := range st {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "%s=%s", s.ID, s.State)
		if s.Err != "" {
			b = fmt.Appendf(b, " (%s)", s.Err)
		}
	}
	if len(b) == 0 {
		return "no instances"
	}
	return string(b)
}

// touch wakes WaitStatus callers.
func (h *Host) touch() {
	h.mu.Lock()
	h.touchLocked()
	h.mu.Unlock()
}

func (h *Host) touchLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// setStateLocked records a state change and queues its OnStatus delivery,
// which unlockNotify makes.
func (h *Host) setStateLocked(in *instance, state State, errText string) {
	if state == StateFailed {
		// Status, and every front end, name the instance before its
		// error: a plugin's "<id>: " in front would read twice.
		errText = strings.TrimPrefix(errText, in.entry.ID+": ")
	}
	if in.state == state && in.err == errText {
		return
	}
	in.state, in.err, in.since = state, errText, time.Now()
	h.notes = append(h.notes, in.statusLocked())
	h.touchLocked()
}

// unlockNotify releases h.mu and delivers queued status changes, in order.
func (h *Host) unlockNotify() {
	h.mu.Unlock()
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	h.mu.Lock()
	notes := h.notes
	h.notes = nil
	h.mu.Unlock()
	if len(notes) == 0 {
		return
	}
	hooks := h.statusHooks.snapshot()
	for _, n := range notes {
		for _, fn := range hooks {
			fn(n)
		}
	}
}

// ReloadStats counts what the watcher did, for status output and tests.
type ReloadStats struct {
	// Applied counts compositions applied (the first load included).
	Applied int
	// Failed counts files that did not parse or validate; nothing changed.
	Failed int
	// Skipped counts file events whose content was unchanged.
	Skipped int
	// LastError is the last failure, cleared by the next success.
	LastError error
	// LastApplied is when a composition was last applied.
	LastApplied time.Time
	// Through is the ticket of the last Reload request answered: every
	// RequestReload ticket up to it has had a forced load of the file
	// that began after the request, applied or failed.
	Through uint64
	// Dropped is the last ticket asked of a Watch that ended: a ticket
	// up to it and past Through will not be answered (no load follows
	// the file), so a caller waiting on it stops.
	Dropped uint64
	// Outcomes says how each entry the last applied composition started,
	// restarted or disposed came out, in composition order.
	Outcomes []Outcome
}

// Outcome is how one entry a reload touched came out.
type Outcome struct {
	ID string
	// Result is "started", "restarted", "kept" (the new config failed; the
	// previous one runs), "failed", "pending" or "disposed".
	Result string
	// Why is the change, or the failure.
	Why string
}

// Reloads returns what Watch has done so far.
func (h *Host) Reloads() ReloadStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// Readiness reports whether the host that runs s is ready to serve, for
// a gateway's /readyz: it has applied a composition, and no instance of
// that first composition is still starting (an eager MCP server still
// connecting), none is yet to start, and none holds it back
// (HoldReadiness: an eager server retrying its first connection, within
// its startup bound); reason says what is awaited when it is not. A
// failed or pending instance does not hold readiness back: its status
// says why.
// Once ready, the host stays so: a reload that restarts an entry keeps the
// rest serving (and an overlapping entry its previous instance), and
// replicas reloaded together must not all leave their load balancer at
// once. A scope of no host (NewScope) is ready.
func (s *Scope) Readiness() (ready bool, reason string) {
	if s.inst == nil {
		return true, ""
	}
	h := s.inst.host
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readinessLocked()
}

// WaitReadiness waits until Readiness reports ready, or ctx ends: a
// gateway holds its first lists there while the composition's servers
// connect.
func (s *Scope) WaitReadiness(ctx context.Context) error {
	if s.inst == nil {
		return nil
	}
	h := s.inst.host
	for {
		h.mu.Lock()
		ready, _ := h.readinessLocked()
		ch := h.changed
		h.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (h *Host) readinessLocked() (ready bool, reason string) {
	if h.wasReady {
		return true, ""
	}
	if !h.applied {
		return false, "the composition is not applied yet"
	}
	for _, in := range h.order {
		if in.state == StateStarting {
			return false, "entry " + in.entry.ID + " is starting"
		}
		// Between two waves of the start nothing is starting, yet the
		// instances of the later wave (those injecting a service of the
		// earlier one) have not started: ready there would latch with
		// their tools missing.
		if !in.evaluated && !in.entry.Disabled {
			return false, "entry " + in.entry.ID + " is not started yet"
		}
		if why, held := in.heldLocked(); held {
			return false, why
		}
	}
	h.wasReady = true
	return true, ""
}
