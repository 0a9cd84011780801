package toolset

import (
	"regexp"
	"strings"
	"testing"
)

// Golden values computed with the original TypeScript function (node), so
// that the Go port is pinned to it byte for byte.
func TestPublicNameGolden(t *testing.T) {
	tests := []struct{ server, raw, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"web", "search", "mcp__web__search"},
		{"fs", "read-file", "mcp__fs__read-file"},
		{"everything", "get-tiny-image", "mcp__everything__get-tiny-image"},
		{"x", "a_b", "mcp__x__a_b"},
		{"srv", "", "mcp__srv__"},
		{"s", strings.Repeat("a", 56), "mcp__s__" + strings.Repeat("a", 56)},
		// Invalid characters: replaced, hash appended.
		{"fx", "admin.reset", "mcp__fx__admin_reset_b885577a4582"},
		{"x", "a.b", "mcp__x__a_b_e6f972983393"},
		{"github-prod_1", "tool/with spaces", "mcp__github-prod_1__tool_with_spaces_2a27a5f6edcf"},
		{"x", "café", "mcp__x__caf__18115fc5d69c"},
		{"x", "tool😀", "mcp__x__tool___045433da763b"},
		// Too long: truncated to 51, hash appended.
		{"s", strings.Repeat("a", 57), "mcp__s__aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_9fb5156b525a"},
		{"s", strings.Repeat("a", 58), "mcp__s__aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_55fd726fa038"},
		{"abcdefghijklmnopqrstuvwxyz012345", "a.very.long.dotted.tool.name.that.goes.on.and.on",
			"mcp__abcdefghijklmnopqrstuvwxyz012345__a_very_long__ca10fa93247b"},
		// Cut after replacement, counting UTF-16 code units.
		{"x", "日本語" + strings.Repeat("x", 60), "mcp__x_____xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_4ccf753e7d42"},
		{"a", strings.Repeat("😀", 40), "mcp__a______________________________________________ae30124cebd6"},
		{"x", "a\x00b", "mcp__x__a_b_68d4cf7ad188"},
	}
	for _, tt := range tests {
		if got := PublicName(tt.server, tt.raw); got != tt.want {
			t.Errorf("PublicName(%q, %q) = %q, want %q", tt.server, tt.raw, got, tt.want)
		}
	}
}

func TestPublicNameContract(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	raws := []string{"a.b", "a_b", "a/b", "a b", "a-b", "ab", strings.Repeat("x", 128),
		strings.Repeat("x", 127) + "y", "日本語", "a\x00b", "🙂", "_"}
	seen := map[string]string{}
	for _, server := range []string{"a", "github", strings.Repeat("s", 32)} {
		for _, raw := range raws {
			name := PublicName(server, raw)
			if !valid.MatchString(name) {
				t.Errorf("PublicName(%q, %q) = %q breaks the function-name contract", server, raw, name)
			}
			if again := PublicName(server, raw); again != name {
				t.Errorf("PublicName(%q, %q) is not deterministic: %q then %q", server, raw, name, again)
			}
			id := server + "\x00" + raw
			if prev, dup := seen[name]; dup {
				t.Errorf("identities %q and %q collapse into %q", prev, id, name)
			}
			seen[name] = id
		}
	}
}
