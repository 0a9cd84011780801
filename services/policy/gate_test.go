package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestGateDecidesEveryDoor: the doors of a server (its resources and
// prompts) follow the rules that cover their kind: server-level rules
// first, then the server's tools (closed when every one is denied), then
// the default for a server without tools. The tools follow only the
// rules that cover tools.
func TestGateDecidesEveryDoor(t *testing.T) {
	reg := testTools(t) // github: create_issue, search_code; fs: write
	console := tools.Caller{Kind: tools.CallerConsole}
	gateway := tools.Caller{Kind: tools.CallerGateway}
	admin := tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Subject: "a", Groups: []string{"admins"}}}
	dev := tools.Caller{Kind: tools.CallerGateway, Identity: &tools.Identity{Subject: "b", Groups: []string{"devs"}}}
	type door struct {
		caller       tools.Caller
		server, kind string
		closedBy     string // the Closed's rule; "-" when open
	}
	for _, c := range []struct {
		name, config string
		doors        []door
		// tool calls of create_issue by console: allow or deny
		createIssue string
	}{
		{"no rules", "default: allow\n", []door{
			{console, "github", "resources", "-"}, {console, "docs", "prompts", "-"},
		}, "allow"},
		{"server denied", "rules:\n  - servers: [github]\n    action: deny\n", []door{
			{console, "github", "resources", "rule 1"}, {console, "github", "prompts", "rule 1"}, {console, "fs", "resources", "-"}, {console, "docs", "resources", "-"},
		}, "deny"},
		{"every tool denied", "rules:\n  - tools: [mcp__github__*]\n    action: deny\n", []door{
			{console, "github", "resources", ""}, {console, "github", "prompts", ""}, {console, "fs", "prompts", "-"},
		}, "deny"},
		{"one tool denied", "rules:\n  - tools: [mcp__github__create_issue]\n    action: deny\n", []door{
			{console, "github", "resources", "-"},
		}, "deny"},
		{"kinds tools", "rules:\n  - servers: [github]\n    kinds: [tools]\n    action: deny\n", []door{
			{console, "github", "resources", "-"}, {console, "github", "prompts", "-"},
		}, "deny"},
		{"kinds resources", "rules:\n  - servers: [github]\n    kinds: [resources]\n    action: deny\n", []door{
			{console, "github", "resources", "rule 1"}, {console, "github", "prompts", "-"},
		}, "allow"},
		{"every tool denied for resources only", "rules:\n  - tools: [mcp__github__*]\n    kinds: [resources]\n    action: deny\n", []door{
			{console, "github", "resources", ""}, {console, "github", "prompts", "-"},
		}, "allow"},
		{"default deny", "default: deny\n", []door{
			{console, "github", "resources", ""}, {console, "docs", "prompts", "default"},
		}, "deny"},
		{"default deny, one tool allowed", "default: deny\nrules:\n  - tools: [mcp__github__search_code]\n    action: allow\n", []door{
			{console, "github", "resources", "-"}, {console, "fs", "resources", ""}, {console, "docs", "resources", "default"},
		}, "deny"},
		{"resources allowed before a deny", "rules:\n  - servers: [github]\n    kinds: [resources]\n    action: allow\n  - servers: [github]\n    action: deny\n", []door{
			{console, "github", "resources", "-"}, {console, "github", "prompts", "rule 2"},
		}, "deny"},
		{"by group", "rules:\n  - servers: [github]\n    when: '\"admins\" in caller.groups'\n    action: allow\n  - servers: [github]\n    action: deny\n", []door{
			{admin, "github", "resources", "-"}, {dev, "github", "resources", "rule 2"}, {gateway, "github", "prompts", "rule 2"},
		}, "deny"},
		{"by caller kind", "rules:\n  - servers: [github]\n    callers: [gateway]\n    action: deny\n", []door{
			{gateway, "github", "resources", "rule 1"}, {console, "github", "resources", "-"},
		}, "allow"},
		// ...and a call without the path fails closed: the deny applies.
		{"a when over args is about calls", "rules:\n  - when: 'args.path.startsWith(\"/etc\")'\n    action: deny\n", []door{
			{console, "github", "resources", "-"}, {console, "docs", "resources", "-"},
		}, "deny"},
		{"ask opens a door", "rules:\n  - servers: [github]\n    action: ask\n", []door{
			{console, "github", "resources", "-"},
		}, "ask"},
		{"a server glob", "rules:\n  - servers: [d*]\n    action: deny\n", []door{
			{console, "docs", "resources", "rule 1"}, {console, "github", "resources", "-"},
		}, "allow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := policy.New(reg, parseConfig(t, c.config), "")
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range c.doors {
				err := p.Gate(d.caller, d.server, d.kind)
				var closed *policy.Closed
				switch {
				case d.closedBy == "-" && err != nil:
					t.Errorf("%s of %s for %s: %v, want open", d.kind, d.server, who(d.caller), err)
				case d.closedBy != "-" && (!errors.As(err, &closed) || !sameRule(closed.Rule, d.closedBy) || closed.Server != d.server || closed.Kind != d.kind):
					t.Errorf("%s of %s for %s: %v (%+v), want closed by %q", d.kind, d.server, who(d.caller), err, closed, d.closedBy)
				}
			}
			if got := p.Decide(tools.Call{Name: "mcp__github__create_issue", Args: []byte(`{}`), Caller: console}).Action; got != c.createIssue {
				t.Errorf("create_issue: %s, want %s", got, c.createIssue)
			}
		})
	}
}

// sameRule: "rule 2 (line 5)" is rule 2.
func sameRule(got, want string) bool {
	return got == want || strings.HasPrefix(want, "rule ") && strings.HasPrefix(got, want+" (")
}

func who(c tools.Caller) string {
	if c.Identity != nil {
		return c.Kind + " " + strings.Join(c.Identity.Groups, ",")
	}
	return c.Kind
}

// TestKindsErrorsNameTheKey: an unknown kind, an empty list or a kind
// listed twice are config errors at their key.
func TestKindsErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ rules, want string }{
		{"  - kinds: [files]\n    action: deny\n", "config key rules[0].kinds[0]: unknown kind \"files\"; kinds are tools, resources, prompts"},
		{"  - kinds: [Tools]\n    action: deny\n", "rules[0].kinds[0]: unknown kind \"Tools\""},
		{"  - kinds: []\n    action: deny\n", "rules[0].kinds: an empty list covers nothing"},
		{"  - kinds: [prompts, prompts]\n    action: deny\n", "rules[0].kinds[1]: \"prompts\" is listed twice"},
	} {
		text := "plugins:\n  - id: policy\n    name: policy\n    config:\n      rules:\n" + indent(c.rules, "    ")
		comp, err := host.ParseComposition("composition.yml", []byte(text), nil)
		if err == nil {
			err = host.Check(comp)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rules\n%s: error %v, want it to contain %q", c.rules, err, c.want)
		}
	}
	// Each kind alone is valid.
	for _, k := range tools.Kinds() {
		parseConfig(t, "rules:\n  - kinds: ["+k+"]\n    action: deny\n")
	}
}

// BenchmarkGate is the gate's cost per door request with 100 rules: a
// server's resources decided by its tools (every rule read for each), and
// by a server-level rule with a CEL condition on the caller.
func BenchmarkGate(b *testing.B) {
	caller := tools.Caller{Kind: "chat", Identity: &tools.Identity{Subject: "a", Groups: []string{"admins"}}}
	for _, c := range []struct{ name, extra string }{
		{"100rules/by-tools", ""},
		{"100rules/server-rule+cel", "  - servers: [github]\n    when: '\"admins\" in caller.groups'\n    action: allow\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			reg := testTools(b)
			rules := hundredRules("")
			if c.extra != "" {
				rules = strings.Replace(rules, "rules:\n", "rules:\n"+c.extra, 1)
			}
			p, err := policy.New(reg, parseConfig(b, rules), "")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Gate(caller, "github", tools.KindResources); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
