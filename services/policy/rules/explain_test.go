package rules_test

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/policy/policytest"
	"github.com/dsh-host/dsh-host/services/tools"
)

const explainRules = `
rules:
  - tools: ["greet"]
    callers: [gateway]
    action: deny
  - servers: [fs]
    annotations: {destructiveHint: false}
    action: ask
  - tools: ["mcp__github__*"]
    when: 'args.repo.owner == "prod"'
    action: deny
  - tools: ["mcp__github__*"]
    when: '"admins" in caller.groups'
    action: allow
  - tools: ["mcp__github__*"]
    action: ask
  - kinds: [resources]
    action: allow
  - tools: ["mcp__other__*"]
    when: 'caller.groups[0] == "bots"'
    action: deny
default: deny
`

// TestExplainAgreesWithDecide: explain's decision is the guard's, for
// every call of a table, and each rule considered says why it matched or
// not.
func TestExplainAgreesWithDecide(t *testing.T) {
	p, err := newEngine(policytest.Tools(t), parseConfig(t, explainRules), "/x/composition.yml")
	if err != nil {
		t.Fatal(err)
	}
	admin := &tools.Identity{Subject: "ada", Groups: []string{"admins"}}
	for _, c := range []struct {
		call tools.Call
		want []string
	}{
		{tools.Call{Name: "greet", Caller: tools.Caller{Kind: "gateway"}}, []string{"YES rule 1 (composition.yml:3) (deny): every condition holds", "6 later rule(s) not reached"}},
		{tools.Call{Name: "greet", Caller: tools.Caller{Kind: "chat"}}, []string{"no  rule 1 (composition.yml:3) (deny): callers gateway: the caller is chat",
			"no  rule 2 (composition.yml:6) (ask): servers fs: greet is no MCP server's tool", "no  rule 3 (composition.yml:9) (deny): tools mcp__github__*: greet is not one of them",
			"no rule matches: the default decides: deny"}},
		{tools.Call{Name: "mcp__fs__write", Caller: tools.Caller{Kind: "chat"}}, []string{"(server fs)", "YES rule 2 (composition.yml:6) (ask)"}},
		{tools.Call{Name: "mcp__github__create_issue", Caller: tools.Caller{Kind: "chat"}, Args: []byte(`{"repo":{"owner":"prod"}}`)}, []string{`YES rule 3 (composition.yml:9) (deny): when args.repo.owner == "prod": true`}},
		{tools.Call{Name: "mcp__github__create_issue", Caller: tools.Caller{Kind: "chat"}, Args: []byte(`{"repo":"prod"}`)}, []string{"YES rule 3 (composition.yml:9) (deny): its when cannot be evaluated"}},
		{tools.Call{Name: "mcp__github__create_issue", Caller: tools.Caller{Kind: "gateway", Identity: admin}, Args: []byte(`{"repo":{"owner":"dev"}}`)}, []string{
			`no  rule 3 (composition.yml:9) (deny): when args.repo.owner == "prod": false`, "YES rule 4 (composition.yml:12) (allow)"}},
		{tools.Call{Name: "mcp__github__create_issue", Caller: tools.Caller{Kind: "gateway"}, Args: []byte(`{"repo":{"owner":"dev"}}`)}, []string{"YES rule 5 (composition.yml:15) (ask)"}},
		{tools.Call{Name: "mcp__github__create_issue", Caller: tools.Caller{Kind: "chat"}, Args: []byte(`{"repo":{"owner":"dev"},"repo":1}`)}, []string{"arguments cannot be read", "YES rule 3"}},
		{tools.Call{Name: "mcp__nope__x", Caller: tools.Caller{Kind: "chat"}}, []string{"not registered", "rule 6 (composition.yml:17) (allow): kinds resources: it does not cover tools", "default decides: deny"}},
		// A when over the caller alone that fails (no groups) applies, as
		// it closes a door (TestGateWhenFailsAsCalls).
		{tools.Call{Name: "mcp__other__y", Caller: tools.Caller{Kind: "chat"}}, []string{"YES rule 7 (composition.yml:19) (deny): its when cannot be evaluated on this call (index out of bounds: 0)"}},
		{tools.Call{Name: "mcp__other__y", Caller: tools.Caller{Kind: "gateway", Identity: &tools.Identity{Groups: []string{"devs"}}}}, []string{`no  rule 7 (composition.yml:19) (deny): when caller.groups[0] == "bots": false`, "default decides: deny"}},
	} {
		x := p.Explain(c.call)
		d := p.Decide(c.call)
		if x.Decision != d {
			t.Errorf("%s %s: explain decides %+v, the guard %+v", c.call.Name, c.call.Args, x.Decision, d)
		}
		text := x.String()
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %s: explanation lacks %q:\n%s", c.call.Name, c.call.Args, w, text)
			}
		}
	}
}
