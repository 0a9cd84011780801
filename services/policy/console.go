package policy

// The web console's approvals: an ask that no terminal can answer (a
// gateway client's call, `chat -p`, `call` without --yes) is put to the
// console attached to the composition (internal/askbroker), when one is.

import (
	"context"
	"errors"
	"time"

	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// DefaultAskTimeout is how long an ask waits for the console's answer
// when the entry's askTimeout does not say.
const DefaultAskTimeout = 60 * time.Second

// consoleAsks is where a policy instance puts the asks nobody else can
// answer: the broker of its host's composition. The zero value puts none
// (a policy built in code, or a composition built in code).
type consoleAsks struct {
	// file is the composition file of the host ("" for none).
	file    string
	timeout time.Duration
}

// askConsole puts d's ask for call to the composition's console and
// records its answer in d. With no console attached it returns
// noConsole, the denial the call had before there were consoles, at
// once, so that nothing waits for nobody.
func (p *Policy) askConsole(ctx context.Context, call tools.Call, server string, d *rules.Decision, noConsole error) error {
	c := p.console
	if c.file == "" {
		return noConsole
	}
	deny := func(why string) error { return &Denial{Tool: call.Name, Rule: d.Rule, Why: why} }
	choices := p.consoleChoices(call)
	answer, err := askbroker.AskConsole(ctx, c.file, askbroker.Ask{
		Caller: callerLabel(call.Caller), Server: server, Tool: call.Name,
		Arguments: call.Args, Preview: p.preview(call), Rule: d.Rule, Choices: choices,
	}, c.timeout)
	switch {
	case errors.Is(err, askbroker.ErrNoConsole):
		// Say where an answer could have come from.
		var dn *Denial
		if errors.As(noConsole, &dn) {
			dn.Why += "; no web console is attached to answer it (dsh-host ui)"
		}
		return noConsole
	case err != nil:
		d.Answer = "console none"
		return deny(err.Error())
	case answer == askbroker.Deny:
		d.Answer = "console deny"
		return deny("denied at the console")
	}
	d.Answer = "console " + string(answer)
	tools.SetNote(ctx, askedKey{}, call.Name)
	switch answer {
	case askbroker.Session:
		p.approvals.session.Store(sessionKey(call.Caller, call.Name), true)
	case askbroker.Always:
		if err := p.saveAlways(call.Name); err != nil {
			p.logger.Warn("policy: the approval holds for this call, but could not be saved", "tool", call.Name, "err", err)
		}
	}
	return nil
}

// consoleChoices are the approvals the console may give call: once; for
// this session where a session is the caller's own (ownSession); always
// where settings keep it.
func (p *Policy) consoleChoices(call tools.Call) []askbroker.Answer {
	choices := []askbroker.Answer{askbroker.Once}
	if ownSession(call.Caller) {
		choices = append(choices, askbroker.Session)
	}
	if p.approvals.settings != nil {
		choices = append(choices, askbroker.Always)
	}
	return choices
}

// callerLabel is how the console names a caller: its kind, its id, and
// who stands behind it when a gateway's client logged in.
func callerLabel(c tools.Caller) string {
	s := c.Kind
	if c.ID != "" {
		s += " " + c.ID
	}
	if id := c.Identity; id != nil && id.Subject != "" {
		s += " (" + id.Subject + ")"
	}
	return s
}
