package rules_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/services/policy/policytest"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// config is the rules' part of a policy config, as the host decodes it.
type config struct {
	Default string       `yaml:"default"`
	Rules   []rules.Rule `yaml:"rules"`
}

// parseConfig decodes and checks a config's rules as the policy does.
func parseConfig(t testing.TB, text string) config {
	t.Helper()
	var cfg config
	if err := yamlv3.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(rules.Check(cfg.Rules)...); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// engine is an Engine with the policy's Decide and SetRules.
type engine struct{ *rules.Engine }

func newEngine(reg *tools.Registry, cfg config, file string) (engine, error) {
	e := engine{rules.New(reg)}
	return e, e.SetRules(cfg, file)
}

func (e engine) Decide(call tools.Call) rules.Decision {
	d, _ := e.Engine.Decide(call)
	return d
}

func (e engine) SetRules(cfg config, file string) error { return e.Set(cfg.Default, cfg.Rules, file) }

func TestRuleTable(t *testing.T) {
	reg := policytest.Tools(t)
	cfg := parseConfig(t, `
default: allow
rules:
  - tools: ["greet"]
    callers: [gateway]
    action: deny
  - annotations: {readOnlyHint: true}
    action: allow
  - tools: ["mcp__github__*"]
    when: 'args.repo.owner == "prod" && args.labels.exists(l, l == "urgent")'
    action: deny
  - tools: ["mcp__github__*"]
    action: ask
  - servers: [fs]
    annotations: {destructiveHint: false, openWorldHint: false}
    action: deny
  - tools: ["mcp__*"]
    action: allow
`)
	p, err := newEngine(reg, cfg, "/x/composition.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, tool, args string
		action, rule     string
	}{
		{"gateway", "greet", `{}`, "deny", "rule 1 (composition.yml:4)"},
		{"console", "greet", `{}`, "allow", "default"},
		// readOnlyHint wins over the github rules below it: first match.
		{"chat", "mcp__github__search_code", `{"repo":{"owner":"prod"},"labels":["urgent"]}`, "allow", "rule 2 (composition.yml:7)"},
		// CEL over nested arguments.
		{"chat", "mcp__github__create_issue", `{"repo":{"owner":"prod"},"labels":["bug","urgent"]}`, "deny", "rule 3 (composition.yml:9)"},
		{"chat", "mcp__github__create_issue", `{"repo":{"owner":"dev"},"labels":["urgent"]}`, "ask", "rule 4 (composition.yml:12)"},
		// An expression that fails (no repo) on a deny rule applies it:
		// the policy fails closed.
		{"chat", "mcp__github__create_issue", `{}`, "deny", "rule 3 (composition.yml:9)"},
		{"call", "mcp__fs__write", `{}`, "deny", "rule 5 (composition.yml:14)"},
		{"call", "mcp__fs__other", `{}`, "allow", "rule 6 (composition.yml:17)"},
	} {
		d := p.Decide(tools.Call{Caller: tools.Caller{Kind: c.kind}, Name: c.tool, Args: []byte(c.args)})
		if d.Action != c.action || d.Rule != c.rule {
			t.Errorf("%s calls %s %s: %+v, want %s by %s", c.kind, c.tool, c.args, d, c.action, c.rule)
		}
	}
}

// TestUnsetHintsTakeTheSpecDefaults: a tool that declares no annotations
// is destructive and open-world, as MCP says; a tool of no MCP server
// matches no annotation rule.
func TestUnsetHintsTakeTheSpecDefaults(t *testing.T) {
	reg := policytest.Tools(t)
	p, err := newEngine(reg, parseConfig(t, `
rules:
  - annotations: {destructiveHint: true, openWorldHint: true}
    action: deny
`), "")
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{
		"mcp__github__create_issue": "deny",  // no annotations: the defaults
		"mcp__github__search_code":  "allow", // read-only is never destructive
		"mcp__fs__write":            "allow",
		"greet":                     "allow",
	} {
		if d := p.Decide(tools.Call{Caller: tools.Caller{Kind: "call"}, Name: tool, Args: []byte(`{}`)}); d.Action != want {
			t.Errorf("%s: %+v, want %s", tool, d, want)
		}
	}
}

// TestSetRulesIsAtomic: calls racing swaps of two rule sets get a
// decision of one set or the other, never a rule or a cached match of the
// set they did not read.
func TestSetRulesIsAtomic(t *testing.T) {
	reg := policytest.Tools(t)
	a := parseConfig(t, "rules:\n  - tools: [x]\n    action: deny\n  - tools: [greet]\n    action: ask\n")
	b := parseConfig(t, "default: deny\nrules:\n  - tools: [greet]\n    action: allow\n")
	p, err := newEngine(reg, a, "a.yml")
	if err != nil {
		t.Fatal(err)
	}
	valid := map[rules.Decision]bool{
		{Action: "ask", Rule: "rule 2 (a.yml:4)"}:   true,
		{Action: "allow", Rule: "rule 1 (b.yml:3)"}: true,
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := range 2000 {
			cfg, file := a, "a.yml"
			if i%2 == 0 {
				cfg, file = b, "b.yml"
			}
			if err := p.SetRules(cfg, file); err != nil {
				t.Error(err)
				return
			}
		}
	})
	seen := map[rules.Decision]bool{}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		d := p.Decide(tools.Call{Caller: tools.Caller{Kind: "call"}, Name: "greet", Args: []byte(`{}`)})
		if !valid[d] {
			t.Fatalf("decision %+v is of neither rule set", d)
		}
		seen[d] = true
	}
	wg.Wait()
	if len(seen) < 2 {
		t.Logf("the calls saw one rule set only: %v", seen)
	}
}

// TestChatRule: chat is asked before a tool not marked readOnlyHint
// unless a rule names chat; the stricter of the rules and the built-in
// rule decides, so a deny keeps its name and an allow for every caller
// does not lift the ask; Explain and Describe say the same.
func TestChatRule(t *testing.T) {
	reg := policytest.Tools(t)
	chat := tools.Caller{Kind: tools.CallerChat}
	for _, c := range []struct {
		config, tool, action, rule string
	}{
		{"", "mcp__fs__write", "ask", rules.ChatRule},
		{"", "mcp__github__search_code", "allow", "default"}, // readOnlyHint
		{"", "greet", "ask", rules.ChatRule},                 // no hints: it may write
		{"rules:\n  - action: allow\n", "mcp__fs__write", "ask", rules.ChatRule},
		{"rules:\n  - tools: [mcp__fs__write]\n    action: deny\n", "mcp__fs__write", "deny", "rule 1"},
		{"default: deny\n", "mcp__fs__write", "deny", "default"},
		{"rules:\n  - callers: [gateway]\n    action: allow\n", "mcp__fs__write", "ask", rules.ChatRule},
		{"rules:\n  - callers: [chat, console]\n    tools: [nothing]\n    action: allow\n", "mcp__fs__write", "allow", "default"},
		// A rule for chat's resource reads says nothing of its tool calls.
		{"rules:\n  - callers: [chat]\n    kinds: [resources]\n    action: deny\n", "mcp__fs__write", "ask", rules.ChatRule},
	} {
		p, err := newEngine(reg, parseConfig(t, c.config), "")
		if err != nil {
			t.Fatal(err)
		}
		call := tools.Call{Caller: chat, Name: c.tool, Args: []byte(`{}`)}
		d := p.Decide(call)
		if d.Action != c.action || !strings.HasPrefix(d.Rule, c.rule) {
			t.Errorf("%q %s: %+v, want %s by %s", c.config, c.tool, d, c.action, c.rule)
		}
		if x := p.Explain(call); x.Decision.Action != d.Action || x.Decision.Rule != d.Rule {
			t.Errorf("%q %s: Explain decides %+v, Decide %+v", c.config, c.tool, x.Decision, d)
		}
		if other := p.Decide(tools.Call{Caller: tools.Caller{Kind: tools.CallerConsole}, Name: c.tool, Args: []byte(`{}`)}); other.Rule == rules.ChatRule {
			t.Errorf("%q %s: the console got chat's rule", c.config, c.tool)
		}
	}
}
