package agent

import (
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
)

// TestConfigErrorsNameTheKeyLine: every key the agent's Validate refuses
// is reported at that key's line (host.KeyErrorf), not at the entry's.
func TestConfigErrorsNameTheKeyLine(t *testing.T) {
	for _, tc := range []struct{ key, config string }{
		{"baseUrl", "baseUrl: ftp://x #<\n"},
		{"model", "model: '  ' #<\n"},
		{"model", "baseUrl: https://api.deepseek.com\nmodel: deepseek-chat #<\n"},
		{"apiKeyEnv", "apiKeyEnv: 'sk-123 456' #<\n"},
		{"maxSteps", "maxSteps: 0 #<\n"},
		{"temperature", "temperature: 3 #<\n"},
		{"timeoutMs", "timeoutMs: -1 #<\n"},
		{"contextWindow", "contextWindow: 10 #<\n"},
		{"compactAt", "compactAt: 1.5 #<\n"},
		{"schemaProfile", "schemaProfile: fancy #<\n"},
		{"reasoningContent", "reasoningContent: maybe #<\n"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			hosttest.CheckKey(t, PluginName, tc.key, tc.config)
		})
	}
}
