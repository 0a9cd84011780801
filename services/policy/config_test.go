package policy_test

import (
	"strings"
	"testing"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/services/policy"
)

// parseConfig decodes and validates a policy config as the host does.
func parseConfig(t testing.TB, text string) policy.Config {
	t.Helper()
	cfg := policy.DefaultConfig()
	if err := yamlv3.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := policy.ValidateConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestConfigErrorsNameTheKey: a CEL expression that does not compile, an
// unknown caller, action or key are config errors at their key's line.
func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ rules, want string }{
		{"  - when: 'args.x =='\n    action: deny\n", "composition.yml:6: entry \"policy\": config key rules[0].when: CEL"},
		{"  - when: 'args.x + 1'\n    action: deny\n", "rules[0].when: CEL: the expression is a"},
		{"  - callers: [robot]\n    action: deny\n", "composition.yml:6: entry \"policy\": config key rules[0].callers[0]: unknown caller \"robot\""},
		{"  - tools: [x]\n    action: maybe\n", "composition.yml:7: entry \"policy\": config key rules[0].action: unknown action \"maybe\""},
		{"  - tool: [x]\n    action: deny\n", "composition.yml:6: entry \"policy\": config key rules[0]: unknown key \"tool\""},
		{"  - annotations: {readonly: true}\n    action: deny\n", "rules[0].annotations.readonly: unknown annotation"},
		// An empty list would match everything, not nothing.
		{"  - tools: []\n    action: deny\n", "composition.yml:6: entry \"policy\": config key rules[0].tools: an empty tools would match every call"},
		{"  - servers: []\n    action: deny\n", "config key rules[0].servers: an empty servers would match every call"},
		{"  - callers: []\n    action: deny\n", "config key rules[0].callers: an empty callers"},
		{"  - annotations: {}\n    action: deny\n", "config key rules[0].annotations: an empty annotations"},
		{"  - servers: ['']\n    action: deny\n", "config key rules[0].servers[0]: an empty glob matches no server"},
		{"  - when: 'args.x == 1'\n    onError: ignore\n    action: deny\n", "composition.yml:7: entry \"policy\": config key rules[0].onError: unknown value \"ignore\""},
		{"  - tools: [x]\n    onError: skip\n    action: deny\n", "config key rules[0].onError: a rule without when"},
		{"  - when: 'args.x == 1'\n    onError: apply\n    action: allow\n", "config key rules[0].onError: an allow rule never applies"},
	} {
		if err := checkRules(c.rules); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rules\n%s: error %v, want it to contain %q", c.rules, err, c.want)
		}
	}
}

// checkRules parses and checks a composition whose policy entry has the
// given rules (YAML list items, indented as under "rules:").
func checkRules(rules string) error {
	text := "plugins:\n  - id: policy\n    name: policy\n    config:\n      rules:\n" + indent(rules, "    ")
	comp, err := host.ParseComposition("composition.yml", []byte(text), nil)
	if err == nil {
		err = host.Check(comp)
	}
	return err
}

func indent(s, by string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "")
}

// TestAskTimeoutKey: askTimeout is a duration up to an hour; a negative,
// a longer one or a bare number (nanoseconds, by mistake) is an error at
// the key.
func TestAskTimeoutKey(t *testing.T) {
	if cfg := parseConfig(t, "askTimeout: 90s\n"); cfg.AskTimeout != 90*time.Second {
		t.Errorf("askTimeout: 90s = %v", cfg.AskTimeout)
	}
	if cfg := parseConfig(t, "{}"); cfg.AskTimeout != 0 {
		t.Errorf("no askTimeout = %v, want 0 (the default, %v)", cfg.AskTimeout, policy.DefaultAskTimeout)
	}
	for _, v := range []string{"-1s", "2h", "60", "soon"} {
		hosttest.CheckKey(t, "policy", "askTimeout", "askTimeout: "+v+" #<\n")
	}
}
