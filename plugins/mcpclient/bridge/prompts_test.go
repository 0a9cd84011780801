package bridge

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"
)

func TestPromptArgs(t *testing.T) {
	p := &mcp.Prompt{Name: "p", Arguments: []*mcp.PromptArgument{
		{Name: "city", Required: true}, {Name: "state"}, {Name: "units"},
	}}
	tests := []struct {
		words   []string
		want    map[string]string
		wantErr string
	}{
		{nil, map[string]string{}, ""},
		{[]string{"Paris"}, map[string]string{"city": "Paris"}, ""},
		{[]string{"Paris", "IDF", "metric"}, map[string]string{"city": "Paris", "state": "IDF", "units": "metric"}, ""},
		// Named ones take their place; positional ones fill the rest in order.
		{[]string{"state=TX", "Austin", "imperial"}, map[string]string{"city": "Austin", "state": "TX", "units": "imperial"}, ""},
		{[]string{"units=si", "city=Rome"}, map[string]string{"city": "Rome", "units": "si"}, ""},
		// A word whose key is not an argument is a positional value.
		{[]string{"a=b"}, map[string]string{"city": "a=b"}, ""},
		{[]string{"city="}, map[string]string{"city": ""}, ""},
		{[]string{"city=a", "city=b"}, nil, "argument city given twice"},
		{[]string{"a", "b", "c", "d"}, nil, `too many arguments: "d" is left over (arguments: city, state, units)`},
	}
	for _, tt := range tests {
		got, err := promptArgs(p, tt.words)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("promptArgs(%q) error = %v, want %q", tt.words, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("promptArgs(%q): %v", tt.words, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("promptArgs(%q) (-want +got):\n%s", tt.words, diff)
		}
	}
	if _, err := promptArgs(&mcp.Prompt{Name: "none"}, []string{"x"}); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("an argument to a prompt without any = %v", err)
	}
	if got := promptUsage(p); got != "city=… [state=…] [units=…]" {
		t.Errorf("promptUsage = %q", got)
	}
}

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
