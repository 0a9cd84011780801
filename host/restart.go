package host

import (
	"context"
	"fmt"
)

// Restart replaces the run of instance id by a new run of the same config,
// as an edit of its entry would: beside the old run when its plugin allows
// overlap (no gap for callers), else after it, and the old config runs
// again if the new run fails (InstanceStatus.Kept). A failed or pending
// instance is started again. It returns the outcome, as Reconcile does.
//
// An unknown id, a disabled entry, or an instance still starting is an
// error naming the id; nothing is changed then.
func (h *Host) Restart(ctx context.Context, id string) (Outcome, error) {
	if err := h.lock(ctx); err != nil {
		return Outcome{}, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.unlock()
		return Outcome{}, ErrClosed
	}
	in := h.byID[id]
	var refused error
	switch {
	case in == nil:
		refused = fmt.Errorf("restart: no entry %q in the composition", id)
	case in.entry.Disabled:
		refused = fmt.Errorf("restart %q: the entry is disabled; enable it instead", id)
	case in.state == StateStarting || in.next != nil:
		refused = fmt.Errorf("restart %q: it is starting; try again when it settled", id)
	}
	if refused != nil {
		h.mu.Unlock()
		h.unlock()
		return Outcome{}, refused
	}
	rep := &report{}
	rep.add(&rep.restarted, id, "restarted on request")
	var stale *instance
	same := &planned{entry: in.entry, plugin: in.plugin, cfg: in.cfg, claims: in.claims, lazy: in.lazy}
	switch {
	case h.carryLocked(in, same):
		if !in.beside {
			stale = in
		}
	case in.scope != nil:
		// Active with no ready config to fall back to: as a changed
		// entry that cannot carry, the run goes and a new one starts.
		stale = in
	default:
		in.evaluated = false // failed or pending: settle starts it again
	}
	h.mu.Unlock()

	done := make(chan struct{})
	var out Outcome
	h.wg.Go(func() {
		defer h.unlock()
		defer close(done)
		if stale != nil {
			if err := h.disposeInst(stale, h.opts.DisposeTimeout); err != nil {
				h.log.Warn("dispose of restarted instance incomplete", "instance", id, "err", err)
			}
		}
		h.settle(rep)
		for _, o := range rep.log(h) {
			if o.ID == id {
				out = o
			}
		}
		h.mu.Lock()
		h.touchLocked()
		abandoned := h.abandoned
		h.mu.Unlock()
		if abandoned {
			// Shutdown gave up waiting for this restart: finish its work.
			h.disposeAll(h.opts.DisposeTimeout)
		}
	})
	select {
	case <-done:
		return out, nil
	case <-ctx.Done():
		select {
		case <-done:
			return out, nil
		default:
		}
		return Outcome{}, fmt.Errorf("restart %q: %w; it finishes in the background", id, ctx.Err())
	}
}
