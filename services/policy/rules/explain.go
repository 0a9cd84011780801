package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/services/tools"
)

// Explanation is how the rules decide one call: each rule considered, in
// order, until one decides.
type Explanation struct {
	Tool   string
	Server string // "" for a tool of no MCP server
	// Registered is false for a name no instance registers: its server
	// and annotations are unknown, so rules on them do not match.
	Registered bool
	// ArgsErr is why the arguments cannot be read ("" when they can).
	ArgsErr  string
	Steps    []Step
	Decision Decision
	// NotReached counts the rules after the one that decided.
	NotReached int
}

// Step is one rule considered.
type Step struct {
	Rule   string
	Action string
	// Decides is true for the rule that decided.
	Decides bool
	// Why says why it matched or not.
	Why string
}

// Explain returns how the rules decide call, rule by rule: the same
// decision as Decide, with the reason for each rule considered. It asks
// no one and does not look at pins or saved approvals.
func (eng *Engine) Explain(call tools.Call) (x Explanation) {
	set := eng.set.Load()
	x = Explanation{Tool: call.Name}
	def, ok := eng.reg.Get(call.Name)
	var ann *annotations
	if ok {
		x.Registered, x.Server = true, def.Origin.Server
		ann = readAnnotations(def.MCPTool)
	}
	// The chat rule has the last word, as in Decide; an unknown tool is
	// not safe (its hints are unknown).
	defer func() {
		if d := set.withChat(call, ok && safeForChat(def), x.Decision); d != x.Decision {
			for i := range x.Steps {
				x.Steps[i].Decides = false
			}
			x.Steps = append(x.Steps, Step{Rule: ChatRule, Action: Ask, Decides: true,
				Why: "the caller is chat and " + call.Name + " is not marked readOnlyHint; the rules' " + x.Decision.Action + " (" + x.Decision.Rule + ") is less strict"})
			x.Decision = d
		}
	}()
	// Decoded once here for the rules too: a Call made outside the
	// registry carries no decoded view.
	args, err := call.Arguments()
	if err != nil {
		x.ArgsErr = err.Error()
	}
	ev := &evalInput{call: call, server: x.Server, args: args, argsErr: err, argsRead: true}
	for i, r := range set.rules {
		step := Step{Rule: r.where, Action: r.Action}
		why, matches := r.explain(call, x.Server, ann, ev)
		step.Why, step.Decides = why, matches
		x.Steps = append(x.Steps, step)
		if matches {
			x.Decision = Decision{Action: r.Action, Rule: r.where}
			if strings.HasPrefix(why, "its when cannot") {
				x.Decision.Why = why
			}
			x.NotReached = len(set.rules) - i - 1
			return x
		}
	}
	x.Decision = Decision{Action: set.def, Rule: "default"}
	return x
}

// explain says whether r decides call, and why, checking its conditions
// in the order decide does.
func (r *rule) explain(call tools.Call, server string, ann *annotations, ev *evalInput) (string, bool) {
	if !r.covers(tools.KindTools) {
		return fmt.Sprintf("kinds %s: it does not cover tools", strings.Join(r.Kinds, ", ")), false
	}
	if len(r.Tools) > 0 && !matchAny(r.Tools, call.Name) {
		return fmt.Sprintf("tools %s: %s is not one of them", strings.Join(r.Tools, ", "), call.Name), false
	}
	if len(r.Servers) > 0 {
		switch {
		case server == "":
			return fmt.Sprintf("servers %s: %s is no MCP server's tool", strings.Join(r.Servers, ", "), call.Name), false
		case !matchAny(r.Servers, server):
			return fmt.Sprintf("servers %s: its server is %s", strings.Join(r.Servers, ", "), server), false
		}
	}
	for _, hint := range annotationKeys() {
		want, set := r.Annotations[hint]
		switch {
		case !set:
		case ann == nil:
			return fmt.Sprintf("annotations: %s is no MCP server's tool, whose hints are unknown", call.Name), false
		case ann.value(hint) != want:
			return fmt.Sprintf("annotations: %s is %v, not %v", hint, ann.value(hint), want), false
		}
	}
	if len(r.Callers) > 0 && !slices.Contains(r.Callers, call.Caller.Kind) {
		return fmt.Sprintf("callers %s: the caller is %s", strings.Join(r.Callers, ", "), call.Caller.Kind), false
	}
	if r.prog == nil {
		return "every condition holds", true
	}
	holds, err := ev.eval(r.prog)
	switch {
	case err != nil && r.failsClosed():
		return whenFailed(err), true
	case err != nil && r.Action == Allow:
		return fmt.Sprintf("its when cannot be evaluated (%v): an allow rule then does not apply", err), false
	case err != nil:
		return fmt.Sprintf("its when cannot be evaluated (%v): onError: skip passes over it", err), false
	case !holds:
		return "when " + r.When + ": false", false
	}
	return "when " + r.When + ": true", true
}

// String renders the explanation for a terminal, one rule a line.
func (x Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", x.Tool)
	switch {
	case !x.Registered:
		b.WriteString(" (not registered: rules on servers or annotations cannot match it)")
	case x.Server != "":
		fmt.Fprintf(&b, " (server %s)", x.Server)
	}
	b.WriteString("\n")
	if x.ArgsErr != "" {
		fmt.Fprintf(&b, "arguments cannot be read: %s (the registry refuses such a call)\n", x.ArgsErr)
	}
	for _, s := range x.Steps {
		mark := "  no "
		if s.Decides {
			mark = "  YES"
		}
		fmt.Fprintf(&b, "%s %s (%s): %s\n", mark, s.Rule, s.Action, s.Why)
	}
	if x.Decision.Rule == "default" {
		fmt.Fprintf(&b, "no rule matches: the default decides: %s\n", x.Decision.Action)
	} else {
		fmt.Fprintf(&b, "decided by %s: %s", x.Decision.Rule, x.Decision.Action)
		if x.NotReached > 0 {
			fmt.Fprintf(&b, " (%d later rule(s) not reached)", x.NotReached)
		}
		b.WriteString("\n")
	}
	return b.String()
}
