package tools

import (
	"slices"

	"github.com/dsh-host/dsh-host/host"
)

// HideFunc reports whether caller is not to be offered def. It runs on
// every listing, once per tool, so it answers from what it has cached; it
// must not call List, Names or Assemble (ListAll is safe), nor modify def.
type HideFunc func(caller Caller, def *Definition) bool

// hider is one registered HideFunc; removal compares the pointer.
type hider struct{ fn HideFunc }

// OnHide registers fn until s is disposed (or remove is called): List,
// Names and Assemble leave out every tool that some HideFunc hides from
// their caller. A hidden tool stays registered: Get, Lookup and Execute
// still find it, and its guards decide a call, so a caller that names it
// learns why it may not use it (the policy holds a tool whose definition
// changed this way, and refuses its calls with the diff). Adding and
// removing fn are assembly changes; a plugin whose fn answers differently
// after a change of its own state calls AssemblyChanged. A nil s panics.
func (r *Registry) OnHide(s *host.Scope, fn HideFunc) (remove func()) {
	mustScope(s, "OnHide")
	h := &hider{fn: fn}
	r.updateHiders(func(l []*hider) []*hider { return append(slices.Clip(l), h) })
	r.AssemblyChanged()
	return s.Effect("tools hide hook", func() {
		r.updateHiders(func(l []*hider) []*hider {
			return slices.DeleteFunc(slices.Clone(l), func(x *hider) bool { return x == h })
		})
		r.AssemblyChanged()
	})
}

func (r *Registry) updateHiders(change func([]*hider) []*hider) {
	r.hookMu.Lock()
	defer r.hookMu.Unlock()
	var cur []*hider
	if p := r.hiders.Load(); p != nil {
		cur = *p
	}
	next := change(cur)
	r.hiders.Store(&next)
}

// Offered returns the definition registered under name when caller is
// offered it (List would hold it): Lookup, less what a HideFunc hides,
// without listing every tool.
func (r *Registry) Offered(caller Caller, name string) (Definition, bool) {
	if e := r.lookup(name); e != nil && r.offered(caller, e) {
		return e.def, true
	}
	return Definition{}, false
}

// offered reports whether caller is offered e: its mask allows the name
// and no HideFunc hides it.
func (r *Registry) offered(caller Caller, e *entry) bool {
	if !caller.Mask.Allows(e.def.Name) {
		return false
	}
	if p := r.hiders.Load(); p != nil {
		for _, h := range *p {
			if r.hides(h, caller, e) {
				return false
			}
		}
	}
	return true
}

// hides runs one HideFunc; a panic is logged and hides the tool: the hook
// that cannot decide is the policy's, and a tool it would hold must not
// show a model its changed description (its calls are refused anyway).
func (r *Registry) hides(h *hider, caller Caller, e *entry) (hidden bool) {
	defer func() {
		if p := recover(); p != nil {
			r.log().Error("tool hide hook panicked; the tool is not offered", "tool", e.def.Name, "panic", p)
			hidden = true
		}
	}()
	return h.fn(caller, &e.def)
}

// ListAll returns every registered definition, sorted by name, whatever
// any caller's mask or HideFunc says: for code that manages the tools
// rather than offers them (a HideFunc that needs a server's other tools).
func (r *Registry) ListAll() []Definition {
	all := r.all()
	out := make([]Definition, len(all))
	for i, e := range all {
		out[i] = e.def
	}
	return out
}
