package host

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

// sameEntry reports whether a running entry can stay as it is: same plugin,
// same disabled flag, deeply equal expanded config. Positions in the file
// do not count: moving an entry does not restart it.
func sameEntry(a, b Entry) bool {
	return a.Name == b.Name && a.Disabled == b.Disabled && reflect.DeepEqual(normConfig(a.Config), normConfig(b.Config))
}

func normConfig(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// carryLocked prepares old, a running instance whose last ready config
// is known, to take pl's config without losing that one: beside it when
// the plugin allows overlap, else disposed with the ready config as
// fallback. It reports false (nothing done) when old is not running a
// ready config, or pl is disabled or names another plugin: then the entry
// is disposed and started anew, as any change.
func (h *Host) carryLocked(old *instance, pl *planned) bool {
	if old.scope == nil || old.state != StateActive || old.readyEntry == nil || old.next != nil ||
		pl.entry.Disabled || old.entry.Disabled || pl.plugin != old.plugin {
		return false
	}
	prev := *old.readyEntry
	old.entry, old.cfg = pl.entry, pl.cfg
	old.claims, old.lazy = pl.claims, pl.lazy
	old.fallback = &prev
	old.beside = old.plugin.overlap
	old.evaluated = false
	return true
}

// reconcile replaces the host's entries with list: unchanged instances are
// kept as they are (failed ones are queued again if retryFailed), removed
// and changed ones disposed (their dependents first), and new ones queued
// for settle. Callers hold h.sem.
func (h *Host) reconcile(list []*planned, retryFailed bool) *report {
	rep := &report{}
	h.mu.Lock()
	next := make([]*instance, 0, len(list))
	nextByID := make(map[string]*instance, len(list))
	var stale []*instance
	for _, pl := range list {
		old := h.byID[pl.entry.ID]
		if old != nil && sameEntry(old.entry, pl.entry) {
			old.entry = pl.entry // positions only
			// A pending instance is looked at again: what it waits for
			// may have changed with the entries around it.
			switch {
			case retryFailed && old.state == StateFailed:
				old.evaluated = false
				rep.add(&rep.retried, old.entry.ID, "retried by an explicit reload")
			case retryFailed && old.kept != "" && h.carryLocked(old, pl):
				rep.add(&rep.retried, old.entry.ID, "its new config failed before; retried by an explicit reload")
				if !old.beside {
					// As for a changed entry: the serving run goes before
					// the new config starts, or it would run on unowned.
					stale = append(stale, old)
				}
			case old.state == StatePending:
				old.evaluated = false
				rep.unchanged++
			default:
				rep.unchanged++
			}
			next = append(next, old)
			nextByID[old.entry.ID] = old
			continue
		}
		if old != nil {
			why := entryChange(old.entry, pl.entry)
			if h.carryLocked(old, pl) {
				// The instance stays: its new config starts beside it,
				// or replaces it with the way back to the config it ran.
				rep.add(&rep.restarted, old.entry.ID, why)
				if !old.beside {
					stale = append(stale, old)
				}
				next = append(next, old)
				nextByID[old.entry.ID] = old
				continue
			}
			stale = append(stale, old)
		}
		// Said as what runs: a disabled entry starts nothing.
		switch id := pl.entry.ID; {
		case old == nil && pl.entry.Disabled, old != nil && old.entry.Disabled && pl.entry.Disabled:
			rep.unchanged++
		case old == nil:
			rep.add(&rep.started, id, "new entry in "+pl.entry.File)
		case pl.entry.Disabled:
			rep.add(&rep.disposed, id, entryChange(old.entry, pl.entry))
		case old.entry.Disabled:
			rep.add(&rep.started, id, entryChange(old.entry, pl.entry))
		default:
			rep.add(&rep.restarted, id, entryChange(old.entry, pl.entry))
		}
		in := &instance{host: h, entry: pl.entry, plugin: pl.plugin, cfg: pl.cfg, claims: pl.claims, lazy: pl.lazy}
		if pl.entry.Disabled {
			in.evaluated = true
			h.setStateLocked(in, StateDisabled, "")
		} else {
			h.setStateLocked(in, StatePending, "not started yet")
		}
		next = append(next, in)
		nextByID[in.entry.ID] = in
	}
	for i := len(h.order) - 1; i >= 0; i-- {
		if old := h.order[i]; nextByID[old.entry.ID] == nil {
			stale = append(stale, old)
			rep.add(&rep.disposed, old.entry.ID, "entry removed")
		}
	}
	h.mu.Unlock()

	for _, in := range stale {
		if err := h.disposeInst(in, h.opts.DisposeTimeout); err != nil {
			h.log.Warn("dispose of replaced instance incomplete", "instance", in.entry.ID, "err", err)
		}
	}
	// A removed entry's totals end with it: one of that id added later
	// counts from 0.
	for _, in := range stale {
		h.tel.forget(in.entry.ID)
	}

	h.mu.Lock()
	h.order, h.byID = next, nextByID
	providers := map[string]*instance{}
	for _, in := range next {
		if !in.entry.Disabled {
			for _, svc := range in.plugin.provides {
				providers[svc] = in
			}
		}
	}
	for _, in := range next {
		in.providers = in.providers[:0]
		for _, d := range in.plugin.inject {
			if p := providers[d.Service]; p != nil && p != in {
				in.providers = append(in.providers, p)
			}
		}
	}
	h.touchLocked()
	h.unlockNotify()
	return rep
}

// settle starts every instance that should run and is not running, in
// waves: an instance is evaluated once every instance providing a service it
// injects has been, and independent ones start in parallel. Running
// instances whose injected services changed provider are disposed and
// started again, and recorded in rep when it is not nil. It returns when
// nothing is left to do. Callers hold h.sem.
func (h *Host) settle(rep *report) {
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		var stale []*instance
		for _, in := range h.order {
			if in.entry.Disabled || !in.evaluated || len(in.plugin.inject) == 0 || maps.Equal(in.seen, h.seenLocked(in)) {
				continue
			}
			if in.scope != nil {
				stale = append(stale, in)
			} else {
				in.evaluated = false
			}
		}
		h.mu.Unlock()
		if len(stale) > 0 {
			for _, in := range stale {
				why := "a service it injects changed provider"
				if rep != nil {
					rep.add(&rep.restarted, in.entry.ID, why)
				} else {
					h.log.Info("restarting: "+why, "instance", in.entry.ID)
				}
				if err := h.disposeInst(in, h.opts.DisposeTimeout); err != nil {
					h.log.Warn("dispose incomplete", "instance", in.entry.ID, "err", err)
				}
			}
			continue
		}

		h.mu.Lock()
		var ready []*instance
		for _, in := range h.order {
			if in.entry.Disabled || in.evaluated {
				continue
			}
			if allEvaluated(in.providers) {
				ready = append(ready, in)
			}
		}
		h.mu.Unlock()
		if len(ready) == 0 {
			return
		}
		if len(ready) == 1 {
			h.start(ready[0])
			continue
		}
		var wg sync.WaitGroup
		for _, in := range ready {
			wg.Go(func() { h.start(in) })
		}
		wg.Wait()
	}
}

func allEvaluated(list []*instance) bool {
	for _, p := range list {
		if !p.evaluated {
			return false
		}
	}
	return true
}

// seenLocked returns, for each service in injects, the run of the instance
// providing it now (0 when none is active).
func (h *Host) seenLocked(in *instance) map[string]uint64 {
	out := make(map[string]uint64, len(in.plugin.inject))
	for _, d := range in.plugin.inject {
		var run uint64
		if p := h.services[d.Service]; p != nil && p.visibleLocked() {
			run = p.inst.run
		}
		out[d.Service] = run
	}
	return out
}

// start evaluates in: pending when a required service is missing, else a
// new scope and the plugin's Apply, leaving it active or failed.
func (h *Host) start(in *instance) {
	h.mu.Lock()
	if in.beside {
		in.beside = false
		if in.scope != nil && !h.closed {
			in.evaluated = true
			h.mu.Unlock()
			h.startBeside(in)
			return
		}
		// Disposed meanwhile (a provider it injects changed): start it
		// anew, with its previous config as the way back.
	}
	if old := in.scope; old != nil {
		// A run still live here would go on serving, owned by nobody,
		// and hold its names against the new one: callers dispose it
		// first, and this is the net should one not.
		in.scope = nil
		h.mu.Unlock()
		h.log.Error("instance starting again while its previous run is live; disposing that run first", "instance", in.entry.ID, "plugin", in.plugin.name)
		if err := old.Dispose(h.opts.DisposeTimeout); err != nil {
			h.log.Warn("dispose incomplete", "instance", in.entry.ID, "err", err)
		}
		h.mu.Lock()
	}
	in.seen = h.seenLocked(in)
	in.evaluated = true
	injected := map[string]any{}
	var missing []string
	for _, d := range in.plugin.inject {
		if in.seen[d.Service] == 0 {
			if !d.Optional {
				missing = append(missing, d.Service)
			}
			continue
		}
		injected[d.Service] = h.services[d.Service].value
	}
	if len(missing) > 0 {
		why := h.waitingLocked(in, missing)
		h.setStateLocked(in, StatePending, why)
		h.unlockNotify()
		h.log.Info("instance pending", "instance", in.entry.ID, "plugin", in.plugin.name, "why", why)
		return
	}
	h.lastRun++
	in.run = h.lastRun
	s := newScope(h.base, in.entry.ID, h.log, in)
	if h.closed {
		s.cancel() // Shutdown began as this wave was starting
	}
	s.injected = injected
	in.scope, in.last = s, s
	h.setStateLocked(in, StateStarting, "")
	cfg, entry, fallback := in.cfg, in.entry, in.fallback
	// An instance kept on its previous config (its file's config failed)
	// that starts again, because a provider changed, starts that config.
	keeping := in.kept != "" && fallback == nil && in.readyEntry != nil
	if keeping {
		entry, cfg = *in.readyEntry, nil
	}
	in.cfg, in.fallback, in.notReady = nil, nil, ""
	h.unlockNotify()

	begin := time.Now()
	err := h.runApply(in, s, &entry, cfg)
	var notReady error
	pending := false
	switch {
	case err != nil:
	case fallback != nil || len(in.plugin.provides) > 0:
		// Something waits on the outcome: the way back to the previous
		// config, or the instances that inject this one's services.
		if notReady = h.waitReady(in.plugin, s); notReady != nil && fallback != nil {
			err, notReady = notReady, nil
		}
	default:
		// Nothing to keep and nobody waiting: the reconcile goes on (a
		// lazy MCP server connects in the background) and only says what
		// the instance said so far.
		pending, notReady = readyNow(in.plugin, s)
	}

	h.mu.Lock()
	if err != nil && fallback != nil && !h.closed {
		h.mu.Unlock()
		h.restore(in, s, *fallback, err)
		return
	}
	if err != nil {
		// Invisible before its disposers run: nothing may inject a
		// service of a failed instance.
		in.scope = nil
		in.kept = ""
		h.mu.Unlock()
		s.Dispose(h.opts.DisposeTimeout)
		h.mu.Lock()
		h.setStateLocked(in, StateFailed, err.Error())
		closed := h.closed
		h.unlockNotify()
		if closed { // cancelled by Shutdown, most likely: not news
			h.log.Info("instance start ended by shutdown", "instance", in.entry.ID, "plugin", in.plugin.name, "err", err)
			return
		}
		h.log.Error("instance failed", "instance", in.entry.ID, "plugin", in.plugin.name, "err", err)
		return
	}
	if !keeping {
		in.kept = ""
	}
	switch {
	case notReady != nil:
		// Nothing to keep: the instance runs on (an MCP client retries
		// in the background), and the reload says it did not get ready.
		in.notReady = notReady.Error()
		h.watchLateReady(in, s, entry)
	case pending:
		h.watchLateReady(in, s, entry)
	default:
		in.readyEntry = &entry
	}
	h.setStateLocked(in, StateActive, "") // from starting: a note with Kept as it is now
	h.unlockNotify()
	if notReady != nil {
		h.log.Warn("instance started but is not ready", "instance", in.entry.ID, "plugin", in.plugin.name, "err", notReady)
		return
	}
	h.log.Debug("instance active", "instance", in.entry.ID, "plugin", in.plugin.name, "took", time.Since(begin))
}

// restore disposes s, the run of in's new config that failed with cause,
// and starts in again with prev, the config it ran before (a plugin that
// cannot overlap). It leaves in active and Kept, or failed with both
// errors.
func (h *Host) restore(in *instance, s *Scope, prev Entry, cause error) {
	h.mu.Lock()
	in.scope = nil
	h.mu.Unlock()
	s.Dispose(h.opts.DisposeTimeout)
	h.log.Warn("new config failed; starting the previous one again", "instance", in.entry.ID, "plugin", in.plugin.name, "err", cause)

	h.mu.Lock()
	h.lastRun++
	in.run = h.lastRun
	r := newScope(h.base, in.entry.ID, h.log, in)
	if h.closed {
		r.cancel()
	}
	r.injected = s.injected
	in.scope, in.last = r, r
	h.unlockNotify()
	err := h.runApply(in, r, &prev, nil)
	if err == nil {
		err = h.waitReady(in.plugin, r)
	}
	h.mu.Lock()
	if err != nil {
		in.scope, in.kept = nil, ""
		h.mu.Unlock()
		r.Dispose(h.opts.DisposeTimeout)
		h.mu.Lock()
		h.setStateLocked(in, StateFailed, fmt.Sprintf("%v; the previous config, started again, failed too: %v", cause, err))
		h.unlockNotify()
		h.log.Error("instance failed; its previous config failed too", "instance", in.entry.ID, "plugin", in.plugin.name, "err", err)
		return
	}
	in.readyEntry = &prev
	in.kept = keptPrefix + cause.Error()
	h.setStateLocked(in, StateActive, "") // from starting
	h.unlockNotify()
}

// runApply runs the plugin's Apply, turning a panic into an error. A config
// already used by an earlier run is decoded afresh, so a run cannot see
// what an earlier one did to it.
func (h *Host) runApply(in *instance, s *Scope, entry *Entry, cfg any) (err error) {
	if cfg == nil {
		c, errs := decodeConfig(in.plugin, entry)
		if len(errs) > 0 {
			return errs[0]
		}
		cfg = c
	}
	// Held first, so released last: the names stay taken until all the
	// instance registered under them is undone.
	claims, err := in.plugin.claims(cfg)
	if err != nil {
		return err
	}
	s.claims.Store(&claims)
	if err := h.hold(s, claims); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			// The stack is what the plugin's author needs; the instance's
			// error (in Status) stays one line.
			s.Logger().Error("apply panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("apply panicked: %v (the log has the stack)", r)
		}
	}()
	return in.plugin.apply(s, cfg)
}

// waitingLocked says what a pending instance waits for, and why.
func (h *Host) waitingLocked(in *instance, missing []string) string {
	var parts []string
	for _, svc := range missing {
		var prov *instance
		for _, p := range in.providers {
			for _, ps := range p.plugin.provides {
				if ps == svc {
					prov = p
				}
			}
		}
		switch {
		case prov == nil:
			if d := h.disabledProviderLocked(svc); d != nil {
				parts = append(parts, fmt.Sprintf("service %q (entry %q provides it but is disabled)", svc, d.entry.ID))
			} else {
				parts = append(parts, fmt.Sprintf("service %q (no entry provides it; add one)", svc))
			}
		case prov.state == StateActive:
			parts = append(parts, fmt.Sprintf("service %q (instance %q is active but did not provide it)", svc, prov.entry.ID))
		default:
			parts = append(parts, fmt.Sprintf("service %q (instance %q is %s)", svc, prov.entry.ID, prov.state))
		}
	}
	return "waiting for " + strings.Join(parts, ", ")
}

func (h *Host) disabledProviderLocked(svc string) *instance {
	for _, in := range h.order {
		if in.entry.Disabled && slices.Contains(in.plugin.provides, svc) {
			return in
		}
	}
	return nil
}

// disposeInst stops the current run of in, if any: first the running
// instances that inject a service of this run (recursively), then its own
// scope, bounded by timeout. It leaves in to be evaluated again.
func (h *Host) disposeInst(in *instance, timeout time.Duration) error {
	h.mu.Lock()
	if in.scope == nil {
		in.evaluated = false
		h.mu.Unlock()
		return nil
	}
	var deps []*instance
	for _, d := range h.order {
		if d == in || d.scope == nil {
			continue
		}
		for _, run := range d.seen {
			if run == in.run {
				deps = append(deps, d)
				break
			}
		}
	}
	h.mu.Unlock()
	var errs []error
	for _, d := range deps {
		if err := h.disposeInst(d, timeout); err != nil {
			errs = append(errs, err)
		}
	}
	h.mu.Lock()
	s := in.scope
	if s == nil { // a dependent's dispose took it down already
		h.mu.Unlock()
		return errors.Join(errs...)
	}
	in.scope = nil
	in.evaluated = false
	h.setStateLocked(in, StatePending, "stopping")
	h.unlockNotify()
	if err := s.Dispose(timeout); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// requestSettle runs a settle in the background, for changes that happen
// outside Apply (a service provided after its instance's Apply returned).
func (h *Host) requestSettle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.wg.Go(func() {
		if h.lock(h.base) != nil {
			return
		}
		defer h.unlock()
		h.settle(nil)
	})
}

// hold takes the claims for s's run, released when s is disposed. Check
// keeps two entries from claiming one name; what is left to refuse is a
// name still held by a run whose dispose has not finished.
func (h *Host) hold(s *Scope, claims []Claim) error {
	for _, c := range claims {
		name := Claim{Kind: c.Kind, Value: c.Value}
		h.mu.Lock()
		holder := h.claims[name]
		if holder == nil {
			h.claims[name] = s
		}
		h.mu.Unlock()
		if holder == s {
			continue // listed twice by the plugin
		}
		if holder != nil && holder == s.replaces {
			// Started beside the run it replaces: the name moves to s
			// at the swap (startBeside).
			h.mu.Lock()
			s.moved = append(s.moved, name)
			h.mu.Unlock()
			s.Effect(fmt.Sprintf("claim %s %s", c.Kind, c.Value), func() {
				h.mu.Lock()
				if h.claims[name] == s {
					delete(h.claims, name)
				}
				h.mu.Unlock()
			})
			continue
		}
		if holder != nil {
			return fmt.Errorf("%s %q is still held by instance %q, whose dispose has not finished; try again once it has (SIGHUP reloads)", c.Kind, c.Value, holder.id)
		}
		s.Effect(fmt.Sprintf("claim %s %s", c.Kind, c.Value), func() {
			h.mu.Lock()
			if h.claims[name] == s {
				delete(h.claims, name)
			}
			h.mu.Unlock()
		})
	}
	return nil
}
