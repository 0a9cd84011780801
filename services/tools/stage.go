package tools

import (
	"fmt"
	"slices"

	"github.com/dsh-host/dsh-host/host"
)

// Staged registrations: an instance started beside the one it replaces
// (host.Definition.Overlap) registers its tools while the old instance
// still serves. They stay out of List, Assemble and Execute until the new
// instance goes live; then, in one step under the registry's lock, they
// replace every tool of the old instance, and followers hear of one
// assembly change.

// stageLocked holds e back for s, which is staged. A name may be one the
// replaced instance holds, not one anybody else holds. first reports
// whether e is s's first staged registration (the caller then asks to be
// told when s goes live).
func (r *Registry) stageLocked(s *host.Scope, e *entry) (first bool, err error) {
	name := e.def.Name
	if held, dup := r.tools[name]; dup && (held.scope == nil || held.scope != s.Replaces()) {
		return false, fmt.Errorf("%w: %q is held by %s; unregister it first or choose another name",
			ErrDuplicateName, name, holder(held.def.Origin))
	}
	list, known := r.staged[s]
	for _, o := range list {
		if o.def.Name == name {
			return false, fmt.Errorf("%w: %q is held by %s; unregister it first or choose another name",
				ErrDuplicateName, name, holder(o.def.Origin))
		}
	}
	if r.staged == nil {
		r.staged = map[*host.Scope][]*entry{}
	}
	r.staged[s] = append(list, e)
	return !known, nil
}

// watchLive makes sure the swap of s, a staged scope, reaches the
// registry even when s registers no tool: the replaced instance's tools
// go then.
func (r *Registry) watchLive(s *host.Scope) {
	r.mu.Lock()
	_, known := r.staged[s]
	if !known {
		if r.staged == nil {
			r.staged = map[*host.Scope][]*entry{}
		}
		r.staged[s] = nil
	}
	r.mu.Unlock()
	if !known {
		s.OnLive(func() { r.promote(s) })
	}
}

// unstageLocked drops e if it is staged (its instance failed, or
// unregistered it before going live).
func (r *Registry) unstageLocked(e *entry) {
	list, ok := r.staged[e.scope]
	if !ok {
		return
	}
	r.staged[e.scope] = slices.DeleteFunc(list, func(o *entry) bool { return o == e })
}

// promote makes s's staged tools the ones served, in place of every tool
// of the instance s replaces: one step, one assembly change. Tools whose
// definitions did not change still change hands (their Execute is the new
// instance's); followers that diff the assembly see nothing.
func (r *Registry) promote(s *host.Scope) {
	old := s.Replaces()
	r.mu.Lock()
	list := r.staged[s]
	delete(r.staged, s)
	var changes []Change
	var gone []*entry
	if old != nil {
		for name, e := range r.tools {
			if e.scope == old {
				delete(r.tools, name)
				r.countLocked(e, -1)
				gone = append(gone, e)
				changes = append(changes, Change{Kind: Unregistered, Name: name, Origin: e.def.Origin})
			}
		}
	}
	if r.tools == nil {
		r.tools = make(map[string]*entry)
	}
	for _, e := range list {
		if held, dup := r.tools[e.def.Name]; dup {
			// Taken meanwhile by a third instance: that one keeps it.
			r.log().Error("tool not served: its name was taken while its instance started", "tool", e.def.Name, "holder", holder(held.def.Origin))
			continue
		}
		r.tools[e.def.Name] = e
		r.countLocked(e, 1)
		changes = append(changes, Change{Kind: Registered, Name: e.def.Name, Origin: e.def.Origin})
	}
	// Once the new tools are in: a tool both instances serve keeps its
	// series.
	for _, e := range gone {
		r.forgetLocked(e)
	}
	r.sorted = nil
	for i, c := range changes {
		r.enqueue(notice{change: c, tool: true, batched: i < len(changes)-1})
	}
	if len(changes) == 0 {
		r.enqueue(notice{})
	}
	r.mu.Unlock()
	r.drain()
}

// enter looks name up and counts a call into the instance that registered
// it (host.Scope.Enter), so that a replaced instance is disposed only
// after its calls end; a replaced instance that takes no more calls sends
// the call to the one that replaced it. When the returned scope is not nil
// the caller calls its Leave once the call ends.
func (r *Registry) enter(name string) (e *entry, entered *host.Scope) {
	for range 3 {
		e = r.lookup(name)
		if e == nil || e.scope == nil {
			return e, nil
		}
		if e.scope.Enter() {
			return e, e.scope
		}
	}
	// Still refused: a scope being disposed. Let the call reach it and
	// fail with its own error, as before there were overlaps.
	return e, nil
}
