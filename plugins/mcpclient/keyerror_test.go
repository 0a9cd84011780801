package mcpclient

import (
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
)

// TestConfigErrorsNameTheKeyLine: every key mcp-client's Validate refuses
// is reported at that key's line in the composition (host.KeyErrorf), not
// at the entry's; a required key that is missing, at the entry's. The
// line marked #< is where the error must point.
func TestConfigErrorsNameTheKeyLine(t *testing.T) {
	const stdio = "transport: stdio\ncommand: x\n"
	const http = "transport: streamable-http\nurl: http://127.0.0.1:1/mcp\n"
	for _, tc := range []struct{ key, config string }{
		{"serverName", "serverName: 'bad name!' #<\n" + stdio},
		{"serverName", stdio}, // missing: the entry's line
		{"transport", "serverName: s\ntransport: websocket #<\ncommand: x\n"},
		{"transport", "serverName: s\ncommand: x\n"},
		{"command", "serverName: s\ntransport: stdio\n"},
		{"url", "serverName: s\n" + stdio + "url: http://x #<\n"},
		{"url", "serverName: s\ntransport: sse\nurl: /relative #<\n"},
		{"cwd", "serverName: s\n" + http + "cwd: /tmp #<\n"},
		{"headers.Bad Name", "serverName: s\n" + http + "headers:\n  Bad Name: x #<\n"},
		{"oauth", "serverName: s\ntransport: sse\nurl: http://127.0.0.1/sse\noauth: #<\n  clientId: x\n"},
		{"oauth.grant", "serverName: s\n" + http + "oauth:\n  grant: magic #<\n"},
		{"oauth.scopes[1]", "serverName: s\n" + http + "oauth:\n  scopes:\n    - ok\n    - 'two words' #<\n"},
		{"oauth.callbackPort", "serverName: s\n" + http + "oauth:\n  callbackPort: 70000 #<\n"},
		{"inheritEnv", "serverName: s\n" + stdio + "inheritEnv: some #<\n"},
		{"toolCallTimeoutMs", "serverName: s\n" + stdio + "toolCallTimeoutMs: 0 #<\n"},
		{"startupTimeoutMs", "serverName: s\n" + stdio + "startupTimeoutMs: -1 #<\n"},
		{"toolCallMaxMs", "serverName: s\n" + stdio + "toolCallMaxMs: 10 #<\n"},
		{"maxResultBytes", "serverName: s\n" + stdio + "maxResultBytes: 0 #<\n"},
		{"protocolVersion", "serverName: s\n" + stdio + "protocolVersion: '1999-01-01' #<\n"},
		{"pin", "serverName: s\n" + stdio + "pin: never #<\n"},
		{"startup", "serverName: s\n" + stdio + "startup: later #<\n"},
		{"idleTimeoutMs", "serverName: s\n" + stdio + "idleTimeoutMs: -5 #<\n"},
		{"failOnStartupError", "serverName: s\n" + stdio + "startup: lazy\nfailOnStartupError: true #<\n"},
		{"reconnect.initialDelayMs", "serverName: s\n" + stdio + "reconnect:\n  initialDelayMs: 0 #<\n"},
		{"reconnect.maxDelayMs", "serverName: s\n" + stdio + "reconnect:\n  maxDelayMs: 0 #<\n"},
		{"reconnect.maxAttempts", "serverName: s\n" + stdio + "reconnect:\n  maxAttempts: 0 #<\n"},
		{"roots[0]", "serverName: s\n" + stdio + "roots:\n  - relative/dir #<\n"},
		{"tools.include[0]", "serverName: s\n" + stdio + "tools:\n  include: ['' #<\n    ]\n"},
		{"tools.exclude[1]", "serverName: s\n" + stdio + "tools:\n  exclude:\n    - a\n    - '' #<\n"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			hosttest.CheckKey(t, PluginName, tc.key, tc.config)
		})
	}
}
