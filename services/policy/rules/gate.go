package rules

import (
	"fmt"
	"slices"
	"strings"

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
//     is asked to read) or denies. A `when` that reads the arguments or
//     the tool is about calls and says nothing of a door (step 2 reads
//     the tool). One that reads neither and fails (caller.groups[0] of a
//     token without groups) fails as it would on every call: a deny rule
//     then closes the door, unless it says onError: skip; an ask or allow
//     rule is passed over (it opens nothing it could not decide).
//  2. When none decides, the door follows the server's tools: it is
//     closed when every one of them is denied to the caller whatever the
//     arguments, by the rules that cover the kind (so `tools:
//     [mcp__fx__*]` → deny closes fx's resources too, a rule with `kinds:
//     [tools]` does not), each tool's rules read as its calls read them
//     (a failing `when` that does not read the arguments applies a deny
//     or ask rule unless onError: skip). A server with no tools
//     registered (connecting, lazy without a catalog, its list failed) is
//     judged as one tool with any name of its own: closed when rules that
//     name tools (mcp__fx__*, *) deny it whatever the arguments; else it
//     follows the default.

// covers reports whether the rule applies to the doors of kind.
func (r *Rule) covers(kind string) bool {
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
	// Why says why a rule whose `when` failed applied; "" otherwise.
	Why string
}

func (c *Closed) Error() string {
	what := "the " + c.Kind + " of server " + c.Server + " are closed to you"
	switch c.Rule {
	case "":
		return what + ": the policy denies you every one of its tools"
	case "default":
		return what + " by the policy's default action"
	}
	if c.Why != "" {
		return what + " by policy " + c.Rule + ": " + c.Why
	}
	return what + " by policy " + c.Rule
}

// unboundOnDoor are the variables a door cannot give a `when`: the
// arguments, the tool at step 1, and what an identity standing for any
// (Identity.Any) would say. A `when` reading one of them and failing may
// fail for want of it, and decides nothing there.
func unboundOnDoor(caller tools.Caller, withTool bool) celVars {
	unbound := readsArgs
	if !withTool {
		unbound |= readsTool
	}
	if caller.Identity != nil && caller.Identity.Any {
		unbound |= readsCaller
	}
	return unbound
}

// doorWhenFailed is a Closed's Why for a deny rule whose `when` failed.
func doorWhenFailed(err error) string {
	return "its when cannot be evaluated (" + err.Error() + "), so it applies (onError: skip would pass over it)"
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
}

// door returns the rules for server's doors of kind, cached until the
// tools change.
func (eng *Engine) door(set *ruleSet, server, kind string) *doorRules {
	key := kind + "\x00" + server
	version := eng.toolsVersion.Load()
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
	for _, d := range eng.reg.ListAll() {
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
	set.perDoor.Store(key, dr)
	return dr
}

// Gate is the registry's GateFunc: nil when caller may reach server's
// doors of kind (resources, prompts), else a *Closed naming why.
func (eng *Engine) Gate(caller tools.Caller, server, kind string) error {
	set := eng.set.Load()
	dr := eng.door(set, server, kind)
	ev := &evalInput{call: tools.Call{Caller: caller}, server: server, withoutArgs: true}
	unbound := unboundOnDoor(caller, false)
	for _, r := range dr.server {
		if len(r.Callers) > 0 && !slices.Contains(r.Callers, caller.Kind) {
			continue
		}
		if r.prog != nil {
			holds, err := ev.eval(r.prog)
			switch {
			case err == nil && !holds:
				continue
			case err == nil:
			case r.reads&unbound != 0 || !r.failsClosed() || r.Action != Deny:
				// The door cannot give what it reads, or the calls too
				// pass over it, or it would open (ask): never open a door
				// on a failure.
				continue
			default:
				return &Closed{Server: server, Kind: kind, Rule: r.where, Why: doorWhenFailed(err)}
			}
		}
		if r.Action == Deny {
			return &Closed{Server: server, Kind: kind, Rule: r.where}
		}
		return nil
	}
	if len(dr.perTool) == 0 {
		if dr.unlisted != nil && deniedWhatever(set, dr.unlisted, caller, dr.probe) {
			return &Closed{Server: server, Kind: kind}
		}
		if set.def == Deny {
			return &Closed{Server: server, Kind: kind, Rule: "default"}
		}
		return nil
	}
	for i, tr := range dr.perTool {
		if !deniedWhatever(set, tr, caller, dr.names[i]) {
			return nil
		}
	}
	return &Closed{Server: server, Kind: kind}
}

// deniedWhatever reports whether tr's rules deny every call of caller to
// the tool name, whatever the arguments: AlwaysDenied, over the
// candidates of one kind.
//
// A `when` that fails without reading what a door lacks fails so on every
// call of the tool by caller, and is read as decide reads it: a deny or
// ask rule applies unless onError: skip, an allow rule is passed over.
func deniedWhatever(set *ruleSet, tr *toolRules, caller tools.Caller, name string) bool {
	var ev *evalInput
	unbound := unboundOnDoor(caller, true)
	for _, r := range tr.candidates {
		if len(r.Callers) > 0 && !slices.Contains(r.Callers, caller.Kind) {
			continue
		}
		if r.prog != nil {
			if ev == nil {
				ev = &evalInput{call: tools.Call{Name: name, Caller: caller}, server: tr.server, withoutArgs: true}
			}
			holds, err := ev.eval(r.prog)
			switch {
			case err == nil && !holds:
				continue
			case err == nil:
			case r.reads&unbound != 0 && r.Action == Deny:
				continue // the arguments may leave some calls allowed
			case r.reads&unbound != 0:
				return false // the arguments may allow (or ask)
			case !r.failsClosed():
				continue
			}
		}
		return r.Action == Deny
	}
	return set.def == Deny
}
