package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/policy/policytest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// BenchmarkPolicy is the policy's cost per call with 100 rules: the guard
// alone, and a whole Execute of an in-process tool with and without it.
// The caller is call: chat would be asked (its built-in rule), and this
// measures the rules themselves.
func BenchmarkPolicy(b *testing.B) {
	call := tools.Call{Caller: tools.Caller{Kind: "call"}, Name: "mcp__github__create_issue", Args: []byte(`{"repo":{"owner":"dev"},"title":"x"}`)}
	for _, c := range []struct{ name, when string }{
		{"guard/100rules", ""},
		{"guard/100rules+cel", `args.repo.owner == "dev"`},
	} {
		b.Run(c.name, func(b *testing.B) {
			reg := policytest.Tools(b)
			p, err := policy.New(reg, parseConfig(b, policytest.HundredRules(c.when)), "")
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Guard(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, guarded := range []bool{false, true} {
		b.Run(fmt.Sprintf("execute/policy=%v", guarded), func(b *testing.B) {
			reg := policytest.Tools(b)
			if guarded {
				p, err := policy.New(reg, parseConfig(b, policytest.HundredRules("")), "")
				if err != nil {
					b.Fatal(err)
				}
				s := host.NewScope(b.Context(), "policy", nil)
				b.Cleanup(func() { _ = s.Dispose(0) })
				reg.OnGuard(s, "*", p.Guard)
			}
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if res := reg.Execute(ctx, call.Caller, call.Name, call.Args); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}

// BenchmarkStdioCall is a trivial call (the fixture's ping, over stdio)
// without the policy, with its pins alone, with 100 rules, and with 100
// rules and the audit trail: the policy's share of a real call.
//
//	go test -run '^$' -bench StdioCall -benchtime 3000x ./services/policy
func BenchmarkStdioCall(b *testing.B) {
	fixture := mcptest.FixtureBinary(b)
	rules := indentLines(strings.TrimPrefix(policytest.HundredRules(""), "rules:\n"), "      ")
	for _, c := range []struct{ name, policy string }{
		{"policy=off", "    disabled: true\n"},
		{"policy=pins", "    config:\n      audit: {enabled: false}\n"},
		{"policy=100rules", "    config:\n      audit: {enabled: false}\n      rules:\n" + rules},
		{"policy=100rules+audit", fmt.Sprintf("    config:\n      audit: {dir: %q}\n      rules:\n", b.TempDir()) + rules},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := hosttest.Start(b, fmt.Sprintf(`plugins:
  - id: github
    name: mcp-client
    config: {serverName: github, transport: stdio, command: %q}
  - id: policy
    name: policy
%s`, fixture, c.policy))
			reg := h.Tools()
			caller := tools.Caller{Kind: "call"} // chat would be asked (its built-in rule)
			ctx := b.Context()
			for b.Loop() {
				if res := reg.Execute(ctx, caller, "mcp__github__ping", []byte(`{}`)); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}

func indentLines(s, by string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString(by + line)
	}
	return b.String()
}
