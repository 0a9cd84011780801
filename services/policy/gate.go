package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// One gate for every door: a server's resources, resource templates and
// prompts are closed to a caller by the same rules that close its tools,
// and every front end that reaches them asks the tools registry's Gate,
// which asks the policy (Gate). A rule covers the kinds it names (kinds:),
// all of them when it names none.
//
// A door has no tool and no arguments, so the rules are read this way:
//
//  1. The rules that cover the kind and name no tools nor annotations
//     (servers:, callers:, when: over caller and server) decide, in order,
//     as for a call: the first that matches allows (ask included: nobody
//     is asked to read) or denies. A `when` that needs the arguments to
//     decide is about calls and says nothing of a door.
//  2. When none decides, the door follows the server's tools: it is
//     closed when every one of them is denied to the caller whatever the
//     arguments, by the rules that cover the kind (so `tools:
//     [mcp__fx__*]` → deny closes fx's resources too, a rule with `kinds:
//     [tools]` does not). A server with no tools registered (connecting,
//     lazy without a catalog, its list failed) is judged as one tool with
//     any name of its own: closed when rules that name tools (mcp__fx__*,
//     *) deny it whatever the arguments; else it follows the default.

// covers reports whether the rule applies to the doors of kind.
func (r *rule) covers(kind string) bool {
	return len(r.Kinds) == 0 || slices.Contains(r.Kinds, kind)
}

// checkKinds validates kinds: known names, not empty when given.
func (r *Rule) checkKinds(key string) []error {
	if r.Kinds == nil {
		return nil
	}
	if len(r.Kinds) == 0 {
		return []error{host.KeyErrorf(key+".kinds", "an empty list covers nothing; leave kinds out to cover %s", strings.Join(tools.Kinds(), ", "))}
	}
	var errs []error
	for i, k := range r.Kinds {
		switch {
		case !slices.Contains(tools.Kinds(), k):
			errs = append(errs, host.KeyErrorf(fmt.Sprintf("%s.kinds[%d]", key, i), "unknown kind %q; kinds are %s", k, strings.Join(tools.Kinds(), ", ")))
		case slices.Index(r.Kinds, k) < i:
			errs = append(errs, host.KeyErrorf(fmt.Sprintf("%s.kinds[%d]", key, i), "%q is listed twice", k))
		}
	}
	return errs
}

// Closed is a door the policy keeps shut: the gate's refusal.
type Closed struct {
	Server, Kind string
	// Rule names the rule that closed it, "default", or "" when every
	// tool of the server is denied.
	Rule string
}

func (c *Closed) Error() string {
	what := "the " + c.Kind + " of server " + c.Server + " are closed to you"
	switch c.Rule {
	case "":
		return what + ": the policy denies you every one of its tools"
	case "default":
		return what + " by the policy's default action"
	}
	return what + " by policy " + c.Rule
}

// doorRules are the rules that can decide one server's doors of one kind,
// as of a version of the tools.
type doorRules struct {
	version uint64
	// server are the rules of step 1.
	server []*rule
	// perTool are, for each of the server's tools (named in names), the
	// rules covering the kind whose static conditions match it (step 2).
	perTool []*toolRules
	names   []string
	// unlisted, for a server without tools, are the rules covering the
	// kind that match any tool of its own (probe's name); nil when none of
	// them names tools, which leaves the server to the default.
	unlisted *toolRules
	probe    string
	// closes are the deny rules among these whose `when`, failing on a
	// door, applies (closingRules).
	closes map[*rule]bool
}

// door returns the rules for server's doors of kind, cached until the
// tools change.
func (p *Policy) door(set *ruleSet, server, kind string) *doorRules {
	key := kind + "\x00" + server
	version := p.toolsVersion.Load()
	if v, ok := set.perDoor.Load(key); ok {
		if dr := v.(*doorRules); dr.version == version {
			return dr
		}
	}
	dr := &doorRules{version: version}
	for _, r := range set.rules {
		if r.covers(kind) && len(r.Tools) == 0 && len(r.Annotations) == 0 &&
			(len(r.Servers) == 0 || matchAny(r.Servers, server)) {
			dr.server = append(dr.server, r)
		}
	}
	for _, d := range p.reg.ListAll() {
		if d.Origin.Server != server {
			continue
		}
		tr := &toolRules{version: version, server: server}
		ann := readAnnotations(d.MCPTool)
		for _, r := range set.rules {
			if r.covers(kind) && r.matchesTool(d.Name, server, ann) {
				tr.candidates = append(tr.candidates, r)
			}
		}
		dr.perTool, dr.names = append(dr.perTool, tr), append(dr.names, d.Name)
	}
	if len(dr.perTool) == 0 {
		// Its tools are not known: a rule that matches every name the
		// server's tools get (mcp__fx__ and a raw name) would deny them.
		dr.probe = "mcp__" + server + "__"
		tr := &toolRules{version: version, server: server}
		named := false
		for _, r := range set.rules {
			if r.covers(kind) && r.matchesTool(dr.probe, server, nil) {
				tr.candidates = append(tr.candidates, r)
				named = named || len(r.Tools) > 0
			}
		}
		if named {
			dr.unlisted = tr
		}
	}
	dr.closes = closingRules(set)
	set.perDoor.Store(key, dr)
	return dr
}

// Gate is the registry's GateFunc: nil when caller may reach server's
// doors of kind (resources, prompts), else a *Closed naming why.
func (p *Policy) Gate(caller tools.Caller, server, kind string) error {
	set := p.rules.Load()
	dr := p.door(set, server, kind)
	ev := &evalInput{call: tools.Call{Caller: caller}, server: server, withoutArgs: true}
	for _, r := range dr.server {
		if len(r.Callers) > 0 && !slices.Contains(r.Callers, caller.Kind) {
			continue
		}
		if r.prog != nil {
			holds, known := ev.decides(r.prog)
			if !known && dr.closes[r] {
				return &Closed{Server: server, Kind: kind, Rule: r.where}
			}
			if !known || !holds {
				continue
			}
		}
		if r.Action == Deny {
			return &Closed{Server: server, Kind: kind, Rule: r.where}
		}
		return nil
	}
	if len(dr.perTool) == 0 {
		if dr.unlisted != nil && deniedWhatever(set, dr.unlisted, caller, dr.probe, dr.closes) {
			return &Closed{Server: server, Kind: kind}
		}
		if set.def == Deny {
			return &Closed{Server: server, Kind: kind, Rule: "default"}
		}
		return nil
	}
	for i, tr := range dr.perTool {
		if !deniedWhatever(set, tr, caller, dr.names[i], dr.closes) {
			return nil
		}
	}
	return &Closed{Server: server, Kind: kind}
}

// deniedWhatever reports whether tr's rules deny every call of caller to
// the tool name, whatever the arguments: alwaysDenied, over the
// candidates of one kind; a rule in closes whose `when` fails denies.
func deniedWhatever(set *ruleSet, tr *toolRules, caller tools.Caller, name string, closes map[*rule]bool) bool {
	var ev *evalInput
	for _, r := range tr.candidates {
		if len(r.Callers) > 0 && !slices.Contains(r.Callers, caller.Kind) {
			continue
		}
		if r.prog != nil {
			if ev == nil {
				ev = &evalInput{call: tools.Call{Name: name, Caller: caller}, server: tr.server, withoutArgs: true}
			}
			holds, known := ev.decides(r.prog)
			switch {
			case known && !holds:
				continue
			case !known && closes[r]:
				return true
			case !known && r.Action == Deny:
				continue
			case !known:
				return false
			}
		}
		return r.Action == Deny
	}
	return set.def == Deny
}

// closesKey keeps closingRules' answer among the door rules (no kind is
// empty, so no door's key is this).
const closesKey = "\x00closes"

// closingRules returns the deny rules of set whose `when`, failing on a
// door, applies: those that do not say onError: skip nor read args (a
// door has none: a failure may be theirs), so that
// what the caller or the server alone cannot decide is a gate that cannot
// decide. Computed once per rule set.
func closingRules(set *ruleSet) map[*rule]bool {
	if v, ok := set.perDoor.Load(closesKey); ok {
		return v.(map[*rule]bool)
	}
	closes := map[*rule]bool{}
	env, envErr := newCELEnv()
	for _, r := range set.rules {
		if r.prog != nil && r.Action == Deny && r.failsClosed() && (envErr != nil || !readsArgs(env, r.When)) {
			closes[r] = true
		}
	}
	set.perDoor.Store(closesKey, closes)
	return closes
}

// readsArgs reports whether the `when` expression reads args; false
// when it cannot tell (the rule then applies: fail closed).
func readsArgs(env *cel.Env, when string) bool {
	a, iss := env.Compile(when)
	if iss.Err() != nil {
		return false
	}
	reads := false
	celast.PreOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.IdentKind && e.AsIdent() == "args" {
			reads = true
		}
	}))
	return reads
}
