package policy

import (
	"context"
	"errors"
	"log/slog"

	"github.com/dsh-host/dsh-host/services/policy/pins"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Policy decides who may call what: its pins, then its rules, then a
// person when a rule asks; every call it sees goes to its audit trail.
type Policy struct {
	reg       *tools.Registry
	logger    *slog.Logger
	approvals approvals
	rules     *rules.Engine
	// pins holds the tools that changed after they were trusted; nil
	// when the config keeps no pins (a policy built in code).
	pins *pins.Pins
	// metrics count the decisions; nil when off.
	metrics *decisions
	// console takes the asks nobody else can answer (console.go).
	console consoleAsks
}

// New returns a policy over reg's tools with the rules of cfg, which
// ValidateConfig has checked; file is where cfg was read from ("" when
// built in code), for the rules' names.
func New(reg *tools.Registry, cfg Config, file string) (*Policy, error) {
	p := &Policy{reg: reg, logger: slog.New(slog.DiscardHandler), rules: rules.New(reg)}
	if err := p.SetRules(cfg, file); err != nil {
		return nil, err
	}
	if cfg.Pins.Dir != "" {
		p.pins = pins.New(cfg.Pins.Dir, reg, func() *slog.Logger { return p.logger })
	}
	return p, nil
}

// SetRules replaces the rules at once.
func (p *Policy) SetRules(cfg Config, file string) error {
	return p.rules.Set(cfg.Default, cfg.Rules, file)
}

// Decide returns the decision for call. It does not ask anyone: an Ask
// decision is the caller's to put to a person (Guard does).
func (p *Policy) Decide(call tools.Call) rules.Decision {
	d, _ := p.rules.Decide(call)
	return d
}

// Explain returns how the rules decide call, rule by rule (rules.Engine's
// Explain): it asks no one and does not look at pins or saved approvals.
func (p *Policy) Explain(call tools.Call) rules.Explanation { return p.rules.Explain(call) }

// Gate is the registry's GateFunc: nil when caller may reach server's
// doors of kind (resources, prompts), else a *rules.Closed naming why.
func (p *Policy) Gate(caller tools.Caller, server, kind string) error {
	return p.rules.Gate(caller, server, kind)
}

// Denial is the reason of a call the policy refused (the guard's error).
type Denial struct {
	Tool string
	Rule string
	// Why adds what happened to an ask ("nobody can answer here: ...").
	Why string
}

func (d *Denial) Error() string {
	s := "denied by policy " + d.Rule
	if d.Rule == "default" {
		s = "denied by the policy's default action"
	}
	if d.Why != "" {
		s += ": " + d.Why
	}
	return s
}

// Guard is the tools pipeline's guard: it allows the call, or refuses it
// with a *Denial naming the rule.
func (p *Policy) Guard(ctx context.Context, call tools.Call) error {
	if err := p.pinGuard(ctx, call); err != nil {
		p.metrics.count("pin", false)
		return err
	}
	d, server := p.rules.Decide(call)
	if server != "" {
		tools.SetNote(ctx, serverNoteKey{}, server)
	}
	var err error
	switch d.Action {
	case rules.Allow:
	case rules.Ask:
		err = p.ask(ctx, call, server, &d)
	default:
		err = &Denial{Tool: call.Name, Rule: d.Rule, Why: d.Why}
	}
	tools.SetNote(ctx, noteKey{}, d)
	p.metrics.count(d.Action, err == nil)
	return err
}

// noteKey is the key of the call's Decision among its notes, for the audit.
type noteKey struct{}

func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
