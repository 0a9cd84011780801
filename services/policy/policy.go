package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"

	"github.com/dsh-host/dsh-host/services/tools"
)

// Policy decides who may call what. Its rules are one immutable set,
// swapped whole (SetRules): a call reads the set once, so it sees the old
// rules or the new ones, never some of each.
type Policy struct {
	reg       *tools.Registry
	logger    *slog.Logger
	approvals approvals
	rules     atomic.Pointer[ruleSet]
	// toolsVersion counts tool registrations and unregistrations: a
	// cached match of a tool against the rules is good while it holds.
	toolsVersion atomic.Uint64
	// pins holds the tools that changed after they were trusted; nil
	// when the config keeps no pins (a policy built in code).
	pins *pins
	// metrics count the decisions; nil when off.
	metrics *decisions
}

// ruleSet is one generation of rules.
type ruleSet struct {
	rules []*rule
	def   string
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

// New returns a policy over reg's tools with the rules of cfg, which
// ValidateConfig has checked; file is where cfg was read from ("" when
// built in code), for the rules' names.
func New(reg *tools.Registry, cfg Config, file string) (*Policy, error) {
	p := &Policy{reg: reg, logger: slog.New(slog.DiscardHandler)}
	if err := p.SetRules(cfg, file); err != nil {
		return nil, err
	}
	if cfg.Pins.Dir != "" {
		p.pins = newPins(cfg.Pins.Dir, reg, func() *slog.Logger { return p.logger })
	}
	return p, nil
}

// SetRules replaces the rules at once.
func (p *Policy) SetRules(cfg Config, file string) error {
	set := &ruleSet{def: cfg.Default}
	if set.def == "" {
		set.def = Allow
	}
	var env celEnv
	for i, r := range cfg.Rules {
		if r.When != "" && r.prog == nil {
			// A config that did not go through ValidateConfig.
			prog, reads, err := env.compile(r.When)
			if err != nil {
				return fmt.Errorf("policy rules[%d].when: %w", i, err)
			}
			r.prog, r.reads = prog, reads
		}
		set.rules = append(set.rules, &rule{Rule: r, where: ruleName(i, file, r.line)})
	}
	p.rules.Store(set)
	return nil
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

// toolsChanged invalidates every cached match.
func (p *Policy) toolsChanged() { p.toolsVersion.Add(1) }

// Decide returns the decision for call. It does not ask anyone: an Ask
// decision is the caller's to put to a person (Guard does).
func (p *Policy) Decide(call tools.Call) Decision {
	set := p.rules.Load()
	return p.decide(set, p.candidates(set, call.Name), call)
}

func (p *Policy) decide(set *ruleSet, tr *toolRules, call tools.Call) Decision {
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

// alwaysDenied reports whether the rules deny every call of caller to
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
func (p *Policy) alwaysDenied(caller tools.Caller, name string) bool {
	set := p.rules.Load()
	return deniedWhatever(set, p.candidates(set, name), caller, name)
}

// candidates returns the rules of set whose static conditions match the
// tool name, cached until the tools change.
func (p *Policy) candidates(set *ruleSet, name string) *toolRules {
	version := p.toolsVersion.Load()
	if v, ok := set.perTool.Load(name); ok {
		if tr := v.(*toolRules); tr.version == version {
			return tr
		}
	}
	// The version is read before the definition: a change between the two
	// leaves an entry that the next call finds stale.
	tr := &toolRules{version: version}
	def, ok := p.reg.Get(name)
	var ann *annotations
	if ok {
		tr.server = def.Origin.Server
		ann = readAnnotations(def.MCPTool)
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
	set := p.rules.Load()
	tr := p.candidates(set, call.Name)
	if tr.server != "" {
		tools.SetNote(ctx, serverNoteKey{}, tr.server)
	}
	d := p.decide(set, tr, call)
	var err error
	switch d.Action {
	case Allow:
	case Ask:
		err = p.ask(ctx, call, tr.server, &d)
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
