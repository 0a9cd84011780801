package policy_test

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestKindsErrorsNameTheKey: an unknown kind, an empty list or a kind
// listed twice are config errors at their key.
func TestKindsErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ rules, want string }{
		{"  - kinds: [files]\n    action: deny\n", "config key rules[0].kinds[0]: unknown kind \"files\"; kinds are tools, resources, prompts"},
		{"  - kinds: [Tools]\n    action: deny\n", "rules[0].kinds[0]: unknown kind \"Tools\""},
		{"  - kinds: []\n    action: deny\n", "rules[0].kinds: an empty list covers nothing"},
		{"  - kinds: [prompts, prompts]\n    action: deny\n", "rules[0].kinds[1]: \"prompts\" is listed twice"},
	} {
		if err := checkRules(c.rules); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rules\n%s: error %v, want it to contain %q", c.rules, err, c.want)
		}
	}
	// Each kind alone is valid.
	for _, k := range tools.Kinds() {
		parseConfig(t, "rules:\n  - kinds: ["+k+"]\n    action: deny\n")
	}
}
