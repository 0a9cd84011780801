package policy

import (
	"context"
	"errors"

	"github.com/dsh-host/dsh-host/services/policy/pins"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// pinGuard refuses a call to a held tool with a *Held naming the change.
func (p *Policy) pinGuard(ctx context.Context, call tools.Call) error {
	if p.pins == nil {
		return nil
	}
	def, ok := p.reg.Get(call.Name)
	if !ok || def.Origin.Server == "" {
		return nil
	}
	h := p.pins.Check(&def)
	if h == nil {
		return nil
	}
	tools.SetNote(ctx, serverNoteKey{}, def.Origin.Server)
	tools.SetNote(ctx, noteKey{}, rules.Decision{Action: rules.Deny, Rule: "pin"})
	switch call.Caller.Kind {
	case tools.CallerChat, tools.CallerGateway:
		return h.ForModel()
	}
	return h
}

// hides is the registry's HideFunc: a held tool is offered to no one, and
// a tool the rules deny to every call of a caller is not offered to it.
func (p *Policy) hides(caller tools.Caller, def *tools.Definition) bool {
	if p.pins != nil && p.pins.Check(def) != nil {
		return true
	}
	return p.rules.AlwaysDenied(caller, def.Name)
}

// Held returns the tools the policy holds now.
func (p *Policy) Held() []*pins.Held {
	if p.pins == nil {
		return nil
	}
	return p.pins.Held()
}

// Review shows what trusting server's tools (only tool's, when not "")
// would approve; see `dsh-host trust`.
func (p *Policy) Review(server, tool string) (*pins.Review, error) {
	if p.pins == nil {
		return nil, errNoPins
	}
	return p.pins.Review(server, tool)
}

// TrustDigest approves server's tools (only tool's, when not "") if their
// definitions are the ones digest names (pins.Review's Digest), and
// nothing otherwise: the error wraps pins.ErrNotReviewed.
func (p *Policy) TrustDigest(server, tool, digest string) (released []string, err error) {
	if p.pins == nil {
		return nil, errNoPins
	}
	return p.pins.TrustDigest(server, tool, digest)
}

var errNoPins = errors.New("this policy keeps no pins (pins.dir is empty)")
