package tools

import (
	"fmt"
	"slices"

	"github.com/dsh-host/dsh-host/host"
)

// The kinds of door a caller reaches a server by. A policy rule may name
// the kinds it covers (kinds: [tools, resources, prompts]).
const (
	// KindTools: its tools, decided call by call by the guards.
	KindTools = "tools"
	// KindResources: its resources and resource templates (list, read,
	// subscribe, complete a template's argument).
	KindResources = "resources"
	// KindPrompts: its prompts (list, get, complete an argument).
	KindPrompts = "prompts"
)

// Kinds returns the door kinds, in the order a person lists them.
func Kinds() []string { return []string{KindTools, KindResources, KindPrompts} }

// GateFunc decides whether caller may reach server's resources or prompts
// (kind): nil lets it through, an error refuses, saying why. It runs on
// every read and listing, so it answers from what it has cached; it must
// not call List, Names or Assemble (ListAll is safe).
type GateFunc func(caller Caller, server, kind string) error

type gater struct{ fn GateFunc }

// OnGate registers fn until s is disposed (or remove is called). Every
// front end that reaches a server's resources or prompts (the gateway,
// mcp_resources and mcp_read) asks Gate, so that one decision, the
// policy's, closes every door. A nil s panics.
func (r *Registry) OnGate(s *host.Scope, fn GateFunc) (remove func()) {
	mustScope(s, "OnGate")
	g := &gater{fn: fn}
	r.updateGaters(func(l []*gater) []*gater { return append(slices.Clip(l), g) })
	return s.Effect("tools gate hook", func() {
		r.updateGaters(func(l []*gater) []*gater {
			return slices.DeleteFunc(slices.Clone(l), func(x *gater) bool { return x == g })
		})
	})
}

func (r *Registry) updateGaters(change func([]*gater) []*gater) {
	r.hookMu.Lock()
	defer r.hookMu.Unlock()
	var cur []*gater
	if p := r.gaters.Load(); p != nil {
		cur = *p
	}
	next := change(cur)
	r.gaters.Store(&next)
}

// Gate reports whether caller may reach server's doors of kind: nil when
// every GateFunc lets it through (or none is registered: no policy), else
// the first refusal. A GateFunc that panics refuses: a gate that cannot
// decide stays closed.
func (r *Registry) Gate(caller Caller, server, kind string) error {
	p := r.gaters.Load()
	if p == nil {
		return nil
	}
	for _, g := range *p {
		if err := r.gate(g, caller, server, kind); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) gate(g *gater, caller Caller, server, kind string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log().Error("tools gate hook panicked; the door stays closed", "server", server, "kind", kind, "panic", p)
			err = fmt.Errorf("the %s of server %s cannot be checked now (the policy failed); try again or tell the operator", kind, server)
		}
	}()
	return g.fn(caller, server, kind)
}
