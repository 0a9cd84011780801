package rules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/policy/policytest"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestGateWhenFailsAsCalls: a door rule whose `when` fails without
// reading the arguments (an index past a token's empty groups, a key the
// caller lacks) fails so on every call, and the gate reads it as the
// calls do: a deny rule closes the door unless onError: skip, at step 1
// (server rules) and through the server's tools (step 2); an allow rule
// that fails opens nothing. A `when` that reads the arguments is about
// calls and leaves the door as before; an identity standing for any is
// not closed by what a real one might not say. For each caller, a door
// closed by a server rule agrees with what Decide and Explain say of the
// server's calls.
func TestGateWhenFailsAsCalls(t *testing.T) {
	reg := policytest.Tools(t) // github: create_issue, search_code; fs: write
	none := tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Subject: "n"}}
	anon := tools.Caller{Kind: tools.CallerGateway}
	admin := tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Subject: "a", Groups: []string{"admins"}}}
	dev := tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Subject: "d", Groups: []string{"devs"}}}
	anyone := tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Any: true}}
	type door struct {
		caller   tools.Caller
		server   string
		closedBy string // the Closed's rule; "-" when open
		why      bool   // the refusal says the when failed
	}
	const notAdmin = `'caller.groups[0] != "admins"'`
	for _, c := range []struct {
		name, config string
		doors        []door
		// doorsOnly: the calls decide otherwise (an ask applies to them).
		doorsOnly bool
	}{
		// The review's case: a token without groups opened the door.
		{"server rule over the caller", "rules:\n  - servers: [github]\n    when: " + notAdmin + "\n    action: deny\n", []door{
			{none, "github", "rule 1", true}, {anon, "github", "rule 1", true}, {dev, "github", "rule 1", false},
			{admin, "github", "-", false}, {none, "fs", "-", false}, {anyone, "github", "-", false},
		}, false},
		{"a key the caller lacks", "rules:\n  - servers: [github]\n    when: 'caller.team == \"ops\"'\n    action: deny\n", []door{
			{admin, "github", "rule 1", true}, {none, "fs", "-", false},
		}, false},
		{"onError skip", "rules:\n  - servers: [github]\n    when: " + notAdmin + "\n    onError: skip\n    action: deny\n", []door{
			{none, "github", "-", false}, {dev, "github", "rule 1", false}, {admin, "github", "-", false},
		}, false},
		// Step 2: every tool denied by a rule naming them.
		{"tools rule over the caller", "rules:\n  - tools: [mcp__github__*]\n    when: " + notAdmin + "\n    action: deny\n", []door{
			{none, "github", "", false}, {dev, "github", "", false}, {admin, "github", "-", false}, {anyone, "github", "-", false},
		}, false},
		{"tools rule, onError skip", "rules:\n  - tools: [mcp__github__*]\n    when: " + notAdmin + "\n    onError: skip\n    action: deny\n", []door{
			{none, "github", "-", false}, {dev, "github", "", false},
		}, false},
		// It reads the tool: step 1 leaves it to step 2, where each tool
		// fails (create_issue) or holds (search_code).
		{"a when over the tool and the caller", "rules:\n  - servers: [github]\n    when: 'caller.groups[0] == \"x\" || tool == \"mcp__github__search_code\"'\n    action: deny\n", []door{
			{none, "github", "", false}, {admin, "github", "-", false},
		}, false},
		// An allow that fails allows no call: the default decides.
		{"allow over the caller, default deny", "default: deny\nrules:\n  - tools: [mcp__github__*]\n    when: '\"admins\" == caller.groups[0]'\n    action: allow\n", []door{
			{none, "github", "", false}, {admin, "github", "-", false},
		}, false},
		{"server allow over the caller, default deny", "default: deny\nrules:\n  - servers: [github]\n    when: '\"admins\" == caller.groups[0]'\n    action: allow\n", []door{
			{none, "github", "", false}, {admin, "github", "-", false},
		}, false},
		// An ask opens a door when it applies; failing, it opens nothing:
		// the next rule decides.
		{"ask over the caller", "rules:\n  - servers: [github]\n    when: " + notAdmin + "\n    action: ask\n  - servers: [github]\n    action: deny\n", []door{
			{none, "github", "rule 2", false}, {dev, "github", "-", false},
		}, true},
		// The arguments may decide it: about calls, not doors.
		{"a when over the caller and the arguments", "rules:\n  - servers: [github]\n    when: 'caller.groups[0] != \"admins\" || args.x == 1'\n    action: deny\n", []door{
			{none, "github", "-", false}, {dev, "github", "rule 1", false},
		}, false},
		{"a tools rule over the arguments", "rules:\n  - tools: [mcp__github__*]\n    when: 'args.path.startsWith(\"/etc\")'\n    action: deny\n", []door{
			{none, "github", "-", false},
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := newEngine(reg, parseConfig(t, c.config), "")
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range c.doors {
				for _, kind := range []string{tools.KindResources, tools.KindPrompts} {
					err := p.Gate(d.caller, d.server, kind)
					var closed *rules.Closed
					switch {
					case d.closedBy == "-" && err != nil:
						t.Errorf("%s of %s for %s: %v, want open", kind, d.server, whoever(d.caller), err)
					case d.closedBy == "-":
					case !errors.As(err, &closed) || !sameRule(closed.Rule, d.closedBy) || closed.Server != d.server:
						t.Errorf("%s of %s for %s: %v, want closed by %q", kind, d.server, whoever(d.caller), err, d.closedBy)
					case d.why != strings.Contains(err.Error(), ": its when cannot be evaluated ("):
						t.Errorf("%s of %s for %s: %q; want a why: %v", kind, d.server, whoever(d.caller), err, d.why)
					}
				}
				if !c.doorsOnly && d.closedBy != "-" && d.closedBy != "" && (d.caller.Identity == nil || !d.caller.Identity.Any) {
					// Closed by a rule over the server: its calls are denied
					// by the same rule, as explain says.
					call := tools.Call{Name: "mcp__github__create_issue", Args: []byte(`{}`), Caller: d.caller}
					got, x := p.Decide(call), p.Explain(call)
					if got.Action != rules.Deny || !sameRule(got.Rule, d.closedBy) || x.Decision != got {
						t.Errorf("%s for %s: decide %+v, explain %+v; want denied by %s", call.Name, whoever(d.caller), got, x.Decision, d.closedBy)
					}
				}
			}
		})
	}
}

func whoever(c tools.Caller) string {
	if c.Identity == nil {
		return c.Kind + " without identity"
	}
	if c.Identity.Any {
		return c.Kind + " any"
	}
	return c.Kind + " " + c.Identity.Subject + " [" + strings.Join(c.Identity.Groups, ",") + "]"
}
