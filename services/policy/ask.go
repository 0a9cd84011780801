package policy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// SettingsSection is the settings section where `always` approvals are
// kept: `policy: {allow: [mcp__github__create_issue]}`. They answer the
// asks of the tools they name (globs); they never turn a deny into an
// allow.
const SettingsSection = "policy"

// Approvals is the settings section's value.
type Approvals struct {
	Allow []string `yaml:"allow,omitempty"`
}

// approvals are the answers that outlive one call.
type approvals struct {
	elicit   *elicit.Service // nil: nobody can be asked
	settings *settings.Store // nil: `always` is not offered
	// session holds "kind\x00id\x00tool" of the calls approved for the
	// rest of the session (the policy instance's life).
	session sync.Map
	always  atomic.Pointer[[]string]
}

// askedKey is the note of a call a person approved when asked (its name):
// the calls it makes are not asked again.
type askedKey struct{}

// SetAlways replaces the `always` approvals (the settings section's).
func (p *Policy) SetAlways(globs []string) {
	globs = slices.Clone(globs)
	p.approvals.always.Store(&globs)
}

// ownSession reports whether a session approval would be c's own: not
// a gateway's, which every client of it shares, nor `call`'s, which ends
// with the call and would otherwise hold for every later `call` to the
// host (a one-shot one without --yes included).
func ownSession(c tools.Caller) bool {
	return c.Kind != tools.CallerGateway && c.Kind != tools.CallerCall
}

func sessionKey(c tools.Caller, tool string) string {
	return c.Kind + "\x00" + c.ID + "\x00" + tool
}

// ask puts an Ask decision to whoever answers for the caller, and records
// the answer in d.
func (p *Policy) ask(ctx context.Context, call tools.Call, server string, d *rules.Decision) error {
	deny := func(why string) error { return &Denial{Tool: call.Name, Rule: d.Rule, Why: why} }
	// The answers given earlier come first, the one to the call that
	// makes this one included: an `always` in settings holds under -p
	// too, where nobody is there to be asked again.
	a := &p.approvals
	if _, ok := a.session.Load(sessionKey(call.Caller, call.Name)); ok {
		d.Answer = elicit.ApproveSession
		return nil
	}
	if globs := a.always.Load(); globs != nil && slices.ContainsFunc(*globs, func(g string) bool { return tools.Match(g, call.Name) }) {
		d.Answer = elicit.ApproveAlways
		return nil
	}
	if parent, ok := tools.ParentNote(ctx, askedKey{}).(string); ok {
		// A person just approved the call that makes this one (mcp_call,
		// whose arguments they read name this tool and its arguments):
		// one question per folded call, at the console for a one-shot
		// command too.
		d.Answer = "with " + parent
		return nil
	}
	if yes, ok := call.Channels.OneShotAnswer(); ok {
		if yes {
			d.Answer = "--yes"
			return nil
		}
		return p.askConsole(ctx, call, server, d, deny("the rule asks for approval; pass --yes to allow it"))
	}
	if a.elicit == nil || !a.elicit.Answerable(call.Channels.CallerAnswerer()) {
		return p.askConsole(ctx, call, server, d, deny("the rule asks for approval, and nobody can answer here (run the console, or add an allow rule)"))
	}
	choices := []string{elicit.ApproveOnce}
	if ownSession(call.Caller) {
		choices = append(choices, elicit.ApproveSession)
	}
	if call.Caller.Kind != tools.CallerGateway && a.settings != nil {
		// A remote client approves its one call: settings are the user's.
		choices = append(choices, elicit.ApproveAlways)
	}
	req := approvalRequest(call, server, d.Rule, choices)
	req.Approval.Preview = p.preview(call)
	res := a.elicit.AskFor(ctx, call.Channels.CallerAnswerer(), req)
	if res.Action != elicit.Accept {
		why := "not approved"
		if res.Reason != "" {
			why += ": " + res.Reason
		}
		d.Answer = "no"
		if res.Action == elicit.Decline && res.Reason != "" {
			// Nobody behind the caller's answerer could be asked (a
			// gateway client that declared no elicitation).
			return p.askConsole(ctx, call, server, d, deny(why))
		}
		return deny(why)
	}
	answer, _ := res.Content[elicit.ApprovalField].(string)
	if !slices.Contains(choices, answer) {
		d.Answer = "no"
		return deny("not approved (the answer was " + strings.TrimSpace(answer) + ")")
	}
	d.Answer = answer
	tools.SetNote(ctx, askedKey{}, call.Name)
	switch answer {
	case elicit.ApproveSession:
		a.session.Store(sessionKey(call.Caller, call.Name), true)
	case elicit.ApproveAlways:
		if err := p.saveAlways(call.Name); err != nil {
			p.logger.Warn("policy: the approval holds for this call, but could not be saved", "tool", call.Name, "err", err)
		}
	}
	return nil
}

// preview is the tool's own account of what call would do ("" when it
// has none, or its Preview panics: the question is asked without it).
func (p *Policy) preview(call tools.Call) (s string) {
	def, ok := p.reg.Get(call.Name)
	if !ok || def.Preview == nil {
		return ""
	}
	defer func() {
		if r := recover(); r != nil {
			p.logger.Warn("policy: a tool's preview panicked; asked without it", "tool", call.Name, "panic", r)
			s = ""
		}
	}()
	return def.Preview(call)
}

// saveAlways adds tool to the settings' approvals, which the settings
// watch then brings back to SetAlways; until then this process knows it.
func (p *Policy) saveAlways(tool string) error {
	cur := p.approvals.always.Load()
	var next []string
	if cur != nil {
		next = slices.Clone(*cur)
	}
	if !slices.Contains(next, tool) {
		p.SetAlways(append(next, tool))
	}
	return settings.Update(p.approvals.settings, SettingsSection, func(v *Approvals) error {
		if !slices.Contains(v.Allow, tool) {
			v.Allow = append(v.Allow, tool)
		}
		return nil
	})
}

// approvalRequest is the question for call, as a form of one choice.
func approvalRequest(call tools.Call, server, rule string, choices []string) elicit.Request {
	titles := map[string]string{
		elicit.ApproveOnce:    "Yes, once",
		elicit.ApproveSession: "Yes, for this session",
		elicit.ApproveAlways:  "Yes, always (saved in settings)",
	}
	var oneOf []map[string]any
	for _, c := range choices {
		oneOf = append(oneOf, map[string]any{"const": c, "title": titles[c]})
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			elicit.ApprovalField: map[string]any{"type": "string", "title": "Allow this call?", "oneOf": oneOf},
		},
		"required": []string{elicit.ApprovalField},
	}
	raw, _ := json.Marshal(schema)
	form, err := elicit.ParseForm(json.RawMessage(raw))
	if err != nil {
		form = &elicit.Form{}
	}
	return elicit.Request{
		Server:   server,
		Mode:     elicit.ModeForm,
		Message:  "Allow " + call.Name + " " + elicit.ShowArgs(call.Args, 200) + "? (asked by policy " + rule + "; decline to refuse)",
		Form:     form,
		Schema:   schema,
		Approval: &elicit.Approval{Tool: call.Name, Args: call.Args, Rule: rule, Choices: choices},
	}
}

func cut(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-1]) + "…"
}
