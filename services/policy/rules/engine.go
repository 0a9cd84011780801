// Package rules is the policy's rules and their CEL conditions: an
// ordered list of allow/ask/deny rules (Rule, as the config writes them,
// checked and compiled by Check), kept by an Engine as one immutable set
// that a reload swaps whole. The first rule whose conditions hold
// decides; none, the default does.
//
//	eng := rules.New(reg)
//	eng.Set(def, rs, file)
//	d, server := eng.Decide(call)      // a call: Decision
//	err := eng.Gate(caller, srv, kind) // a server's resources/prompts: *Closed
//	eng.AlwaysDenied(caller, tool)     // hide it from caller's listings
//	x := eng.Explain(call)             // Decide, rule by rule
//
// A `when` that cannot be evaluated fails closed: a deny or ask rule then
// applies unless it says onError: skip; an allow rule never does.
package rules

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"

	"github.com/dsh-host/dsh-host/services/tools"
)

// Engine decides calls and doors by one immutable set of rules, swapped
// whole (Set): a call reads the set once, so it sees the old rules or the
// new ones, never some of each.
type Engine struct {
	reg *tools.Registry
	set atomic.Pointer[ruleSet]
	// toolsVersion counts tool registrations and unregistrations: a
	// cached match of a tool against the rules is good while it holds.
	toolsVersion atomic.Uint64
}

// New returns an engine over reg's tools that allows everything until
// Set gives it rules.
func New(reg *tools.Registry) *Engine {
	eng := &Engine{reg: reg}
	eng.set.Store(&ruleSet{def: Allow, chat: true})
	return eng
}

// Set replaces the rules at once: rs (which Check has compiled, or which
// Set compiles), tried in order, then def ("" is allow). file is where
// they were read from ("" when built in code), for the rules' names.
func (eng *Engine) Set(def string, rs []Rule, file string) error {
	set := &ruleSet{def: def, chat: ChatDefault(rs)}
	if set.def == "" {
		set.def = Allow
	}
	var env celEnv
	for i, r := range rs {
		if r.When != "" && r.prog == nil {
			// Rules that did not go through Check.
			prog, reads, err := env.compile(r.When)
			if err != nil {
				return fmt.Errorf("policy rules[%d].when: %w", i, err)
			}
			r.prog, r.reads = prog, reads
		}
		set.rules = append(set.rules, &rule{Rule: r, where: ruleName(i, file, r.line)})
	}
	eng.set.Store(set)
	return nil
}

// ToolsChanged invalidates every cached match: the registry's tools changed.
func (eng *Engine) ToolsChanged() { eng.toolsVersion.Add(1) }

// Decide returns the decision for call and the server of its tool ("" for
// a tool of no MCP server). It asks no one: an Ask is the caller's to put
// to a person.
func (eng *Engine) Decide(call tools.Call) (d Decision, server string) {
	set := eng.set.Load()
	tr := eng.candidates(set, call.Name)
	return set.withChat(call, tr.safe, eng.decide(set, tr, call)), tr.server
}

// Describe lists the rules, one a line, then the default.
func (eng *Engine) Describe() string {
	set := eng.set.Load()
	var b strings.Builder
	for _, r := range set.rules {
		fmt.Fprintf(&b, "%s: %s", r.where, r.Action)
		for _, c := range []struct {
			key  string
			vals []string
		}{{"tools", r.Tools}, {"servers", r.Servers}, {"callers", r.Callers}, {"kinds", r.Kinds}} {
			if len(c.vals) > 0 {
				fmt.Fprintf(&b, " %s=%s", c.key, strings.Join(c.vals, ","))
			}
		}
		for _, hint := range annotationKeys() {
			if v, ok := r.Annotations[hint]; ok {
				fmt.Fprintf(&b, " %s=%v", hint, v)
			}
		}
		if r.When != "" {
			fmt.Fprintf(&b, " when %s", r.When)
		}
		if r.OnError != "" {
			fmt.Fprintf(&b, " onError=%s", r.OnError)
		}
		b.WriteString("\n")
	}
	if set.chat {
		fmt.Fprintf(&b, "%s: %s callers=%s readOnlyHint=false\n", ChatRule, Ask, tools.CallerChat)
	}
	fmt.Fprintf(&b, "default: %s\n", set.def)
	return b.String()
}

// ruleSet is one generation of rules.
type ruleSet struct {
	rules []*rule
	def   string
	// chat says the built-in chat rule holds (chat.go).
	chat bool
	// perTool caches, by tool name, the rules whose static conditions
	// (tools, servers, annotations) match that tool.
	perTool sync.Map // string -> *toolRules
	// perDoor caches, by kind and server, the rules of its doors (gate.go).
	perDoor sync.Map // string -> *doorRules
}

type rule struct {
	Rule
	// where names the rule in a decision: "rule 2 (composition.yml:14)".
	where string
}

// toolRules are a tool's candidate rules, as of a version of the tools.
type toolRules struct {
	version    uint64
	server     string
	candidates []*rule
	// safe is true for a tool chat calls without asking (chat.go).
	safe bool
}

// Decision is what the policy decided for one call.
type Decision struct {
	// Action is Allow, Ask or Deny.
	Action string
	// Rule names the rule that decided ("rule 2 (composition.yml:14)"),
	// or "default" when none matched.
	Rule string
	// Answer is how an Ask was answered: once, session, always, --yes, or
	// no; "" when nobody was asked.
	Answer string
	// Why says why a rule whose `when` failed applied; "" otherwise.
	Why string
}

// ruleName is "rule 2 (composition.yml:14)": rules count from 1, as a
// person does.
func ruleName(i int, file string, line int) string {
	name := "rule " + strconv.Itoa(i+1)
	switch {
	case file != "" && line > 0:
		return name + " (" + filepath.Base(file) + ":" + strconv.Itoa(line) + ")"
	case line > 0:
		return name + " (line " + strconv.Itoa(line) + ")"
	}
	return name
}

func (eng *Engine) decide(set *ruleSet, tr *toolRules, call tools.Call) Decision {
	var ev *evalInput
	for _, r := range tr.candidates {
		if len(r.Callers) > 0 && !slices.Contains(r.Callers, call.Caller.Kind) {
			continue
		}
		if r.prog != nil {
			if ev == nil {
				ev = &evalInput{call: call, server: tr.server}
			}
			holds, err := ev.eval(r.prog)
			if err != nil {
				if !r.failsClosed() {
					continue
				}
				return Decision{Action: r.Action, Rule: r.where, Why: whenFailed(err)}
			}
			if !holds {
				continue
			}
		}
		return Decision{Action: r.Action, Rule: r.where}
	}
	return Decision{Action: set.def, Rule: "default"}
}

// failsClosed reports whether r applies when its `when` cannot be
// evaluated: a deny or ask rule does, unless it says onError: skip; an
// allow rule never does.
func (r *Rule) failsClosed() bool {
	return r.Action != Allow && r.OnError != OnErrorSkip
}

// whenFailed is a Decision's Why for a rule that applied because its
// `when` failed.
func whenFailed(err error) string {
	return "its when cannot be evaluated on this call (" + err.Error() + "), so it applies (onError: skip would pass over it)"
}

// AlwaysDenied reports whether the rules deny every call of caller to
// the tool, whatever its arguments: the first rule that can match it
// whatever they are denies (or none can, and the default does), and no
// rule before it that depends on them (when) could allow or ask.
//
// A `when` that the caller alone decides (caller.groups, caller.subject:
// an identity a gateway's token gave) is evaluated here: one that holds
// whatever the arguments counts as a rule without `when`, one that fails
// whatever they are as no rule, so that each caller is offered what its
// identity may call. One that fails without reading the arguments is
// read as decide reads it (deniedWhatever, which the doors share).
func (eng *Engine) AlwaysDenied(caller tools.Caller, name string) bool {
	set := eng.set.Load()
	return deniedWhatever(set, eng.candidates(set, name), caller, name)
}

// candidates returns the rules of set whose static conditions match the
// tool name, cached until the tools change.
func (eng *Engine) candidates(set *ruleSet, name string) *toolRules {
	version := eng.toolsVersion.Load()
	if v, ok := set.perTool.Load(name); ok {
		if tr := v.(*toolRules); tr.version == version {
			return tr
		}
	}
	// The version is read before the definition: a change between the two
	// leaves an entry that the next call finds stale.
	tr := &toolRules{version: version}
	def, ok := eng.reg.Get(name)
	var ann *annotations
	if ok {
		tr.server = def.Origin.Server
		ann = readAnnotations(def.MCPTool)
		tr.safe = safeForChat(def)
	}
	for _, r := range set.rules {
		if r.covers(tools.KindTools) && r.matchesTool(name, tr.server, ann) {
			tr.candidates = append(tr.candidates, r)
		}
	}
	set.perTool.Store(name, tr)
	return tr
}

func (r *rule) matchesTool(name, server string, ann *annotations) bool {
	if len(r.Tools) > 0 && !matchAny(r.Tools, name) {
		return false
	}
	if len(r.Servers) > 0 && (server == "" || !matchAny(r.Servers, server)) {
		return false
	}
	for hint, want := range r.Annotations {
		if ann == nil || ann.value(hint) != want {
			return false
		}
	}
	return true
}

func matchAny(globs []string, s string) bool {
	for _, g := range globs {
		if tools.Match(g, s) {
			return true
		}
	}
	return false
}

// annotations are an MCP tool's hints, with the spec's defaults where
// the server left one out: not read-only, destructive (when not
// read-only), not idempotent, open world.
type annotations struct {
	ReadOnly    *bool `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
	Idempotent  *bool `json:"idempotentHint"`
	OpenWorld   *bool `json:"openWorldHint"`
}

// readAnnotations reads the hints of an MCP tool's listing; nil for a
// tool of no MCP server, whose hints are unknown.
func readAnnotations(mcpTool json.RawMessage) *annotations {
	if len(mcpTool) == 0 {
		return nil
	}
	var t struct {
		Annotations annotations `json:"annotations"`
	}
	_ = json.Unmarshal(mcpTool, &t) // a listing that does not decode has the defaults
	return &t.Annotations
}

func (a *annotations) value(hint string) bool {
	or := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	readOnly := or(a.ReadOnly, false)
	switch hint {
	case "readOnlyHint":
		return readOnly
	case "destructiveHint":
		// The spec gives it meaning only for a tool that writes.
		return !readOnly && or(a.Destructive, true)
	case "idempotentHint":
		return or(a.Idempotent, false)
	case "openWorldHint":
		return or(a.OpenWorld, true)
	}
	return false
}

// evalInput is a call's CEL variables, built on the first `when`.
type evalInput struct {
	call     tools.Call
	server   string
	args     map[string]any
	argsRead bool
	caller   map[string]any
	// withoutArgs leaves args unbound: a listing has no arguments, and an
	// expression that reads them fails unless the rest decides it.
	withoutArgs bool
	// argsErr is why the call's arguments cannot be read.
	argsErr error
}

// eval evaluates prog on the call: an error when it fails (a missing key,
// a wrong type, arguments that cannot be read) or yields no bool.
func (e *evalInput) eval(prog cel.Program) (bool, error) {
	out, _, err := prog.Eval(e)
	if err != nil {
		if e.argsErr != nil {
			return false, fmt.Errorf("the arguments cannot be read: %w; %w", e.argsErr, err)
		}
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("it yields %v, not a bool", out.Value())
	}
	return b, nil
}

// ResolveName binds the CEL variables (an interpreter.Activation), each
// built at its first use: most conditions read args alone. The arguments
// are the call's one decoded view (tools.Call.Arguments), numbers as
// written; arguments that cannot be read leave args unbound, so that a
// when reading them fails. With withoutArgs, args is unbound too.
func (e *evalInput) ResolveName(name string) (any, bool) {
	switch name {
	case "args":
		if e.withoutArgs {
			return nil, false
		}
		if !e.argsRead {
			e.argsRead = true
			e.args, e.argsErr = e.call.Arguments()
		}
		return e.args, e.argsErr == nil
	case "tool":
		return e.call.Name, true
	case "server":
		return e.server, true
	case "caller":
		if e.caller == nil {
			e.caller = callerVars(e.call.Caller)
		}
		return e.caller, true
	}
	return nil, false
}

// Parent is the activation's parent: none.
func (e *evalInput) Parent() interpreter.Activation { return nil }

// callerVars are caller's CEL variables. An identity that stands for any
// (Identity.Any) leaves what it would say unbound, as args: a when that
// reads it might hold.
func callerVars(c tools.Caller) map[string]any {
	caller := map[string]any{"kind": c.Kind, "id": c.ID, "subject": "", "client": "", "scopes": []string{}, "groups": []string{}}
	if id := c.Identity; id != nil {
		caller["subject"], caller["client"] = id.Subject, id.Client
		caller["scopes"], caller["groups"] = nonNil(id.Scopes), nonNil(id.Groups)
		if id.Any {
			for _, k := range []string{"subject", "client", "scopes", "groups"} {
				delete(caller, k)
			}
		}
	}
	return caller
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
