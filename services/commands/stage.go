package commands

import (
	"fmt"
	"slices"

	"github.com/dsh-host/dsh-host/host"
)

// Staged commands: an instance started beside the one it replaces
// (host.Definition.Overlap) registers its commands (an MCP server's
// prompts) while the old one still serves; they replace the old one's in
// one step when the new instance goes live.

// stage holds e back until s goes live. A name may be one the replaced
// instance holds. The caller holds r.mu; stage releases it.
func (r *Registry) stage(s *host.Scope, e *entry) (remove func(), err error) {
	name := e.cmd.Name
	if held, taken := r.cmds[name]; taken && (held.scope == nil || held.scope != s.Replaces()) {
		r.mu.Unlock()
		return nil, fmt.Errorf("command /%s is already registered by instance %q: pick another name or remove the other registration", name, held.owner)
	}
	list, known := r.staged[s]
	if slices.ContainsFunc(list, func(o *entry) bool { return o.cmd.Name == name }) {
		r.mu.Unlock()
		return nil, fmt.Errorf("command /%s is already registered by instance %q: pick another name or remove the other registration", name, e.owner)
	}
	if r.staged == nil {
		r.staged = map[*host.Scope][]*entry{}
	}
	r.staged[s] = append(list, e)
	r.mu.Unlock()
	if !known {
		s.OnLive(func() { r.promote(s) })
	}
	return s.Effect("command /"+name, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.cmds[name] == e {
			delete(r.cmds, name)
		}
		r.unstageLocked(e)
	}), nil
}

func (r *Registry) unstageLocked(e *entry) {
	if list, ok := r.staged[e.scope]; ok {
		r.staged[e.scope] = slices.DeleteFunc(list, func(o *entry) bool { return o == e })
	}
}

// promote makes s's staged commands the ones served, in place of every
// command of the instance s replaces.
func (r *Registry) promote(s *host.Scope) {
	old := s.Replaces()
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.staged[s]
	delete(r.staged, s)
	if old != nil {
		for name, e := range r.cmds {
			if e.scope == old {
				delete(r.cmds, name)
			}
		}
	}
	if r.cmds == nil {
		r.cmds = map[string]*entry{}
	}
	for _, e := range list {
		if _, taken := r.cmds[e.cmd.Name]; !taken {
			r.cmds[e.cmd.Name] = e
		}
	}
}
