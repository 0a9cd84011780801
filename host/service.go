package host

import (
	"fmt"
	"slices"
)

// provision is one provided service: the value and the run of the instance
// that provides it. It is visible to others only while that run is active.
type provision struct {
	inst  *instance
	scope *Scope
	value any
}

// Provide makes v the service k for as long as s lives. Providing a service
// another active instance already provides is an error.
//
// The plugin must list k in its Definition.Provides (the host orders
// startup by it). The service becomes visible when the providing instance's
// Apply returns without error, and goes away when the instance is disposed;
// the instances that inject it are started, and restarted, accordingly.
//
// On a scope made by NewScope, Provide stores v on that scope, where Get and
// Lookup on the same scope find it; this lets tests drive plugin code
// without a host.
func Provide[T any](s *Scope, k Key[T], v T) error {
	return s.provide(k.name, v)
}

// Get returns the injected service k. It panics if the plugin did not
// declare k in Inject (a programmer error); a required service is always
// present while the instance runs.
func Get[T any](s *Scope, k Key[T]) T {
	v, ok := Lookup(s, k)
	if !ok {
		panic(fmt.Sprintf("host: service %q is not available to instance %s; Get is for required services, use Lookup for optional ones", k.name, s.id))
	}
	return v
}

// Lookup returns the service k and whether it is present. On a [Scope] it
// is the injected service, for optional injections: the value is the one
// the instance was started with; when the provider changes, the instance is
// restarted rather than seeing a new value mid-run. It panics if the
// plugin declares k neither in Inject nor in Provides. On a [Host] it is
// the service as the host provides it now, for code outside any plugin (a
// front end, a test), which follows the host's changes itself.
func Lookup[T any](from Source, k Key[T]) (T, bool) {
	var zero T
	v, ok := from.lookup(k.name)
	if !ok {
		return zero, false
	}
	t, ok := v.(T)
	if !ok {
		panic(fmt.Sprintf("host: service %q is a %T, not the %T its key says; declare each key once", k.name, v, zero))
	}
	return t, true
}

// Source is where Lookup finds services: a [Scope] or a [Host].
type Source interface {
	lookup(name string) (any, bool)
}

func (h *Host) lookup(name string) (any, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.services[name]; p != nil && p.visibleLocked() {
		return p.value, true
	}
	return nil, false
}

// visibleLocked reports whether p is the service of an active instance run.
func (p *provision) visibleLocked() bool {
	return p.inst.state == StateActive && p.inst.scope == p.scope
}

func (s *Scope) provide(name string, v any) error {
	if s.inst == nil {
		s.mu.Lock()
		if s.disposed {
			s.mu.Unlock()
			return fmt.Errorf("provide %s: scope %s is disposed", name, s.id)
		}
		if _, dup := s.local[name]; dup {
			s.mu.Unlock()
			return fmt.Errorf("provide %s: already provided on scope %s", name, s.id)
		}
		if s.local == nil {
			s.local = map[string]any{}
		}
		s.local[name] = v
		s.mu.Unlock()
		s.Effect("provide "+name, func() {
			s.mu.Lock()
			delete(s.local, name)
			s.mu.Unlock()
		})
		return nil
	}
	return s.inst.host.provide(s, name, v)
}

func (s *Scope) lookup(name string) (any, bool) {
	if s.inst == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		v, ok := s.local[name]
		return v, ok
	}
	p := s.inst.plugin
	if slices.ContainsFunc(p.inject, func(d Dep) bool { return d.Service == name }) {
		v, ok := s.injected[name]
		return v, ok
	}
	if slices.Contains(p.provides, name) {
		// An instance may read back what it provides itself.
		h := s.inst.host
		h.mu.Lock()
		defer h.mu.Unlock()
		if prov := h.services[name]; prov != nil && prov.scope == s {
			return prov.value, true
		}
		return nil, false
	}
	panic(fmt.Sprintf("host: plugin %s uses service %q without declaring it; add host.Require or host.Optional of its key to Inject", p.name, name))
}

func (h *Host) provide(s *Scope, name string, v any) error {
	in := s.inst
	if !slices.Contains(in.plugin.provides, name) {
		return fmt.Errorf("provide %s: plugin %s does not declare it; add the key to its Definition.Provides", name, in.plugin.name)
	}
	if s.disposedNow() {
		return fmt.Errorf("provide %s: instance %s is disposed", name, s.id)
	}
	h.mu.Lock()
	// A provision whose run has ended but whose disposer has not run yet
	// (a dispose that timed out before reaching it) no longer counts.
	if p := h.services[name]; p != nil && p.inst.scope == p.scope {
		h.mu.Unlock()
		if p.scope == s {
			return fmt.Errorf("provide %s: instance %s already provides it", name, s.id)
		}
		return fmt.Errorf("provide %s: already provided by instance %s", name, p.inst.entry.ID)
	}
	prov := &provision{inst: in, scope: s, value: v}
	h.services[name] = prov
	late := in.state == StateActive && in.scope == s
	h.mu.Unlock()
	// Outside h.mu: on a scope disposed meanwhile, OnDispose runs the
	// disposer at once, and it takes h.mu.
	s.OnDispose("provide "+name, func() error {
		h.mu.Lock()
		if h.services[name] == prov {
			delete(h.services, name)
		}
		h.mu.Unlock()
		return nil
	})
	if late {
		// Provided after apply returned (from a goroutine): the instances
		// that inject it learn of it through a settle of their own.
		h.requestSettle()
	}
	return nil
}
