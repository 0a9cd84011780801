package agent

import (
	"testing"

	"github.com/dsh-host/dsh-host/plugins/agent/schemaprofile"
)

// TestAPIHostAsDNSComparesIt: the auto choices that depend on the API's
// host (schemaProfile, DeepSeek's rules) see a host the way DNS does:
// case does not matter, nor the trailing dot of a fully qualified name.
func TestAPIHostAsDNSComparesIt(t *testing.T) {
	for _, c := range []struct {
		url              string
		gemini, deepseek bool
	}{
		{"https://generativelanguage.googleapis.com/v1beta/openai", true, false},
		{"https://GenerativeLanguage.googleapis.com/v1beta/openai", true, false},
		{"https://GENERATIVELANGUAGE.GOOGLEAPIS.COM", true, false},
		{"https://generativelanguage.googleapis.com./v1beta/openai", true, false},
		{"https://GenerativeLanguage.GoogleAPIs.com.:443/v1beta/openai", true, false},
		{"https://US-Central1-AIPlatform.googleapis.com./v1/projects/p", true, false},
		{"https://API.DeepSeek.com", false, true},
		{"https://api.deepseek.com./v1", false, true},
		{"https://api.deepseek.com", false, true},
		// Look-alikes stay what they are.
		{"https://generativelanguage.googleapis.com.evil.example", false, false},
		{"https://api.deepseek.com.evil.example", false, false},
		{"https://generativelanguage.googleapis.com..", false, false},
		{"http://127.0.0.1:8080", false, false},
		{"::not a url", false, false},
	} {
		want := schemaprofile.Standard
		if c.gemini {
			want = schemaprofile.Gemini
		}
		if got := schemaprofile.Resolve(schemaprofile.Auto, c.url); got != want {
			t.Errorf("schemaProfile auto at %s: %s, want %s", c.url, got, want)
		}
		if got := isDeepSeekURL(c.url); got != c.deepseek {
			t.Errorf("isDeepSeekURL(%s) = %v, want %v", c.url, got, c.deepseek)
		}
	}
}
