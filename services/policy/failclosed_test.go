package policy_test

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/policy/policytest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestWhenFailsClosed: arguments the policy reads as the server will (a
// number beyond a double's range, an integer past 2^53), and a when that
// cannot be evaluated (a list where a string was meant, arguments that
// cannot be read) makes a deny or ask rule apply, unless it says
// onError: skip; an allow rule never applies on an error.
func TestWhenFailsClosed(t *testing.T) {
	reg := policytest.Tools(t)
	p, err := policy.New(reg, parseConfig(t, `
rules:
  - tools: [mcp__fs__write]
    when: 'args.path.startsWith("/etc")'
    action: deny
  - tools: [mcp__github__create_issue]
    when: 'args.path.startsWith("/etc")'
    onError: skip
    action: deny
  - tools: [mcp__github__create_issue]
    when: 'args.id == 9007199254740993'
    action: deny
  - tools: [mcp__github__search_code]
    when: 'args.path.startsWith("/tmp")'
    action: allow
  - tools: [mcp__github__search_code]
    when: 'args.n > 10'
    action: ask
default: allow
`), "/x/composition.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool, args, action, rule string
		why                      bool
	}{
		{"mcp__fs__write", `{"path":"/etc/passwd"}`, "deny", "rule 1 (composition.yml:3)", false},
		{"mcp__fs__write", `{"path":"/tmp/x"}`, "allow", "default", false},
		// 1e400 is a number the server reads as Infinity: the rest of the
		// arguments are read all the same.
		{"mcp__fs__write", `{"path":"/etc/passwd","pad":1e400}`, "deny", "rule 1 (composition.yml:3)", false},
		{"mcp__fs__write", `{"path":"/tmp/x","pad":-1e400}`, "allow", "default", false},
		// A list where the rule expects a string: the rule applies.
		{"mcp__fs__write", `{"path":["/etc/passwd"]}`, "deny", "rule 1 (composition.yml:3)", true},
		{"mcp__fs__write", `{}`, "deny", "rule 1 (composition.yml:3)", true},
		// Arguments that cannot be read one way: a key twice, not JSON.
		{"mcp__fs__write", `{"path":"/tmp/x","path":"/etc/passwd"}`, "deny", "rule 1 (composition.yml:3)", true},
		{"mcp__fs__write", `{"path":`, "deny", "rule 1 (composition.yml:3)", true},
		// onError: skip passes over it; the next rule reads an integer
		// past 2^53 exactly (as a double it would equal ...992).
		{"mcp__github__create_issue", `{"path":["/etc"],"id":9007199254740993}`, "deny", "rule 3 (composition.yml:10)", false},
		{"mcp__github__create_issue", `{"path":"/etc","id":9007199254740993}`, "deny", "rule 2 (composition.yml:6)", false},
		{"mcp__github__create_issue", `{"path":["/etc"],"id":9007199254740992}`, "allow", "default", false},
		// An allow whose when fails does not allow; the ask after it
		// fails closed too.
		{"mcp__github__search_code", `{"path":1}`, "ask", "rule 5 (composition.yml:16)", true},
		{"mcp__github__search_code", `{"path":"/tmp/a"}`, "allow", "rule 4 (composition.yml:13)", false},
		{"mcp__github__search_code", `{"path":"/x","n":11}`, "ask", "rule 5 (composition.yml:16)", false},
		{"mcp__github__search_code", `{"path":"/x","n":1e400}`, "ask", "rule 5 (composition.yml:16)", false},
		{"mcp__github__search_code", `{"path":"/x","n":3}`, "allow", "default", false},
	} {
		// call, not chat: chat's built-in ask would hide the default.
		d := p.Decide(tools.Call{Caller: tools.Caller{Kind: "call"}, Name: c.tool, Args: []byte(c.args)})
		if d.Action != c.action || d.Rule != c.rule || (d.Why != "") != c.why {
			t.Errorf("%s %s: %+v, want %s by %s (a why: %v)", c.tool, c.args, d, c.action, c.rule, c.why)
		}
	}
	// The denial says why a failed when applied the rule.
	err = p.Guard(t.Context(), tools.Call{Caller: tools.Caller{Kind: "chat"}, Name: "mcp__fs__write", Args: []byte(`{"path":["/etc/passwd"]}`)})
	if err == nil || !strings.Contains(err.Error(), "denied by policy rule 1 (composition.yml:3): its when cannot be evaluated") {
		t.Errorf("guard: %v, want a denial saying the when could not be evaluated", err)
	}
}
