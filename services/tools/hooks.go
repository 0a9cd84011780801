package tools

import (
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/host"
)

// hookSet is an immutable snapshot of every pipeline hook. Writers build a
// new one under Registry.hookMu; Execute loads it without locking.
type hookSet struct {
	pre   []*hook[PreExecuteHook]
	guard []*hook[GuardHook]
	post  []*hook[PostExecuteHook]
	// finish sees every call's end (finish.go); matched per call, as an
	// unknown name has no entry to cache a match on.
	finish []*hook[FinishHook]
}

type hook[F any] struct {
	pattern string
	fn      F
	scope   *host.Scope
	removed bool // under hookMu: a staged hook removed before its swap
}

// matchedHooks are the hooks of one hookSet whose patterns match one tool,
// in registration order.
type matchedHooks struct {
	set   *hookSet
	pre   []PreExecuteHook
	guard []GuardHook
	post  []PostExecuteHook
}

var noHooks = &hookSet{}

func (r *Registry) hookSet() *hookSet {
	if s := r.hooks.Load(); s != nil {
		return s
	}
	return noHooks
}

// hooksFor returns the hooks matching e's name. The match is computed once
// per tool and hook set, so Execute does no pattern matching in the steady
// state.
func (e *entry) hooksFor(set *hookSet) *matchedHooks {
	if m := e.matched.Load(); m != nil && m.set == set {
		return m
	}
	m := &matchedHooks{
		set:   set,
		pre:   matching(set.pre, e.def.Name),
		guard: matching(set.guard, e.def.Name),
		post:  matching(set.post, e.def.Name),
	}
	e.matched.Store(m)
	return m
}

func matching[F any](hooks []*hook[F], name string) []F {
	var out []F
	for _, h := range hooks {
		if Match(h.pattern, name) {
			out = append(out, h.fn)
		}
	}
	return out
}

// addHook appends fn to the list field selects, in a new hook set, bound to
// s, and returns its idempotent remover.
func addHook[F any](r *Registry, s *host.Scope, label, pattern string, fn F, field func(*hookSet) *[]*hook[F]) (remove func()) {
	mustScope(s, label)
	// A pattern whose literal characters break the name contract is a
	// mistake (a regexp, a dotted name) that would silently never fire.
	if literal := strings.ReplaceAll(pattern, "*", ""); pattern == "" || literal != "" && !ValidName(literal) {
		r.log().Warn("tool hook pattern can match no tool name", "hook", label, "pattern", pattern, "names", NamePattern)
	}
	h := &hook[F]{pattern: pattern, fn: fn, scope: s}
	add := func(set *hookSet) {
		if !h.removed {
			l := field(set)
			*l = append(slices.Clip(*l), h)
		}
	}
	if s.Staged() {
		r.stageHook(s, add)
	} else {
		r.updateHooks(add)
	}
	return s.Effect("tools "+label+" "+pattern, func() {
		r.updateHooks(func(set *hookSet) {
			h.removed = true
			l := field(set)
			*l = slices.DeleteFunc(slices.Clone(*l), func(x *hook[F]) bool { return x == h })
		})
	})
}

// stageHook holds back the hook that add adds, for s, which is staged
// beside the instance it replaces: when s goes live, its hooks replace
// that instance's in one hook set, so a call (which takes the hook set
// once) meets the old hooks or the new ones, never both and never
// neither. A guard that left before its successor arrived would let calls
// through unguarded.
func (r *Registry) stageHook(s *host.Scope, add func(*hookSet)) {
	r.hookMu.Lock()
	list, known := r.stagedHooks[s]
	if r.stagedHooks == nil {
		r.stagedHooks = map[*host.Scope][]func(*hookSet){}
	}
	r.stagedHooks[s] = append(list, add)
	r.hookMu.Unlock()
	if known {
		return
	}
	// Outside hookMu: OnLive runs fn at once if s went live meanwhile.
	s.OnLive(func() { r.promoteHooks(s) })
	s.Effect("staged tool hooks", func() {
		r.hookMu.Lock()
		delete(r.stagedHooks, s) // s failed before going live
		r.hookMu.Unlock()
	})
}

// promoteHooks swaps s's staged hooks in for those of the instance s
// replaces, in one new hook set.
func (r *Registry) promoteHooks(s *host.Scope) {
	old := s.Replaces()
	r.updateHooks(func(set *hookSet) {
		if old != nil {
			set.pre = withoutScope(set.pre, old)
			set.guard = withoutScope(set.guard, old)
			set.post = withoutScope(set.post, old)
			set.finish = withoutScope(set.finish, old)
		}
		for _, add := range r.stagedHooks[s] {
			add(set)
		}
		delete(r.stagedHooks, s)
	})
}

func withoutScope[F any](l []*hook[F], s *host.Scope) []*hook[F] {
	return slices.DeleteFunc(slices.Clone(l), func(h *hook[F]) bool { return h.scope == s })
}

func (r *Registry) updateHooks(change func(*hookSet)) {
	r.hookMu.Lock()
	defer r.hookMu.Unlock()
	next := *r.hookSet()
	change(&next)
	r.hooks.Store(&next)
}

// OnPreExecute registers a hook for tools whose name matches pattern (`*`
// matches any run of characters; the match is anchored, see Match). Hooks
// run in registration order, each seeing the arguments as the previous one
// left them. A hook may replace call.Args; changes to call.Name and
// call.Caller are ignored. An error refuses the call (a *RefusalError at
// StagePreExecute, unless it is the caller's own cancellation). The hook
// goes away when s is disposed, or earlier by remove; a nil s panics, as it
// does for every hook.
func (r *Registry) OnPreExecute(s *host.Scope, pattern string, fn PreExecuteHook) (remove func()) {
	return addHook(r, s, "pre-execute hook", pattern, fn, func(h *hookSet) *[]*hook[PreExecuteHook] { return &h.pre })
}

// OnGuard registers a guard for tools whose name matches pattern. Guards run
// after every pre-execute hook, in registration order; the first that
// returns an error denies the call with that reason (a *RefusalError at
// StageGuard).
func (r *Registry) OnGuard(s *host.Scope, pattern string, fn GuardHook) (remove func()) {
	return addHook(r, s, "guard", pattern, fn, func(h *hookSet) *[]*hook[GuardHook] { return &h.guard })
}

// OnPostExecute registers a hook for tools whose name matches pattern. It
// sees every successful result, after output validation and rendering, in
// registration order. See PostExecuteHook for what it may change; its
// changes take precedence over the tool's own projection.
func (r *Registry) OnPostExecute(s *host.Scope, pattern string, fn PostExecuteHook) (remove func()) {
	return addHook(r, s, "post-execute hook", pattern, fn, func(h *hookSet) *[]*hook[PostExecuteHook] { return &h.post })
}
