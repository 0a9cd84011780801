package resources

import (
	"fmt"
	"slices"

	"github.com/dsh-host/dsh-host/host"
)

// Staged providers: an instance started beside the one it replaces
// (host.Definition.Overlap) registers its provider while the old one still
// serves its server. The new source keeps its lists to itself until its
// instance goes live; then it takes the old source's place in one step,
// and the lists are announced changed only if they differ.

// stage registers src, whose instance is staged, to go live with it. The
// caller holds r.mu; stage releases it.
func (r *Registry) stage(s *host.Scope, src *Source) (*Source, error) {
	for _, o := range r.sources {
		if o.p.Server == src.p.Server && (o.scope == nil || o.scope != s.Replaces()) {
			r.mu.Unlock()
			return nil, fmt.Errorf("resources: server %q is already registered", src.p.Server)
		}
	}
	src.staged = true
	r.mu.Unlock()
	s.Effect("resources provider "+src.p.Server, src.remove)
	s.OnLive(func() { r.promote(src) })
	return src, nil
}

// promote puts src, staged, in the place of the source of the same server
// that its instance replaces, and follows the subscriptions that source
// held.
func (r *Registry) promote(src *Source) {
	old := src.scope.Replaces()
	r.mu.Lock()
	if src.removed {
		r.mu.Unlock()
		return
	}
	src.staged = false
	var prev *Source
	i := slices.IndexFunc(r.sources, func(o *Source) bool { return o.p.Server == src.p.Server && o.scope == old && old != nil })
	if i >= 0 {
		prev = r.sources[i]
		prev.removed = true
		r.sources[i] = src
		for uri, h := range r.held {
			if h == prev {
				delete(r.held, uri)
			}
		}
	} else {
		r.sources = append(r.sources, src)
	}
	listChanged := prev == nil || prev.sig != src.sig
	promptsChanged := prev == nil || prev.promptSig != src.promptSig
	if prev == nil {
		listChanged = src.sig != ""
		promptsChanged = src.promptSig != ""
	}
	adopt := r.adoptLocked(src)
	r.wakeLocked()
	r.mu.Unlock()
	if listChanged {
		r.emit(Change{Kind: ListChanged, Server: src.p.Server})
	}
	if promptsChanged {
		r.emit(Change{Kind: PromptsChanged, Server: src.p.Server})
	}
	r.resubscribe(src, adopt)
}
