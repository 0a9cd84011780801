package bridge

import (
	"testing"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"
)

func TestPublicPromptName(t *testing.T) {
	for _, tt := range []struct{ server, prompt, want string }{
		{"everything", "args-prompt", "mcp__everything__args-prompt"},
		{"gh", "review pr", toolset.PublicName("gh", "review pr")}, // made safe like a tool name
	} {
		if got := PublicPromptName(tt.server, tt.prompt); got != tt.want {
			t.Errorf("PublicPromptName(%q, %q) = %q, want %q", tt.server, tt.prompt, got, tt.want)
		}
	}
}
