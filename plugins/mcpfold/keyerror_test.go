package mcpfold

import (
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
)

// TestConfigErrorsNameTheKeyLine: every key mcp-fold's Validate refuses
// is reported at that key's line (host.KeyErrorf), not at the entry's,
// and every problem at once.
func TestConfigErrorsNameTheKeyLine(t *testing.T) {
	for _, tc := range []struct{ key, config string }{
		{"prefix", "prefix: 'has space' #<\n"},
		{"keep[1]", "keep:\n  - a\n  - '' #<\n"},
		{"servers[0]", "servers:\n  - 'not a name' #<\n"},
		{"descriptionLimit", "descriptionLimit: 0 #<\n"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			hosttest.CheckKey(t, PluginName, tc.key, tc.config)
		})
	}
	if got := hosttest.Check(t, "plugins:\n  - {id: f, name: mcp-fold, config: {prefix: '', descriptionLimit: 0}}\n"); len(got) != 2 {
		t.Errorf("Check = %q; want both problems", got)
	}
}
