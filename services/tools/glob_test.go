package tools_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"", "", true},
		{"", "a", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"exact", "inexact", false},
		{"mcp__*", "mcp__github__x", true},
		{"mcp__*", "mcp__", true},
		{"mcp__*", "x_mcp__github", false},
		{"mcp__github__*", "mcp__github__search", true},
		{"mcp__github__*", "mcp__githubx__search", false},
		{"*__search", "mcp__github__search", true},
		{"*__search", "mcp__github__search_code", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"ab*ba", "aba", false}, // prefix and suffix may not overlap
		{"ab*ba", "abba", true},
		{"a**b", "ab", true},
		{"*a*", "bab", true},
		{"*a*", "bbb", false},
		{"a*a*a", "aaa", true},
		{"a*a*a", "aa", false},
		{"*x*y", "xyxy", true},
		// Regexp metacharacters are literal.
		{"a.c", "abc", false},
		{"a.c", "a.c", true},
		{"a?", "ab", false},
		{"[ab]", "a", false},
		{"mcp__*__search*", "mcp__github__search_code", true},
	}
	for _, tt := range tests {
		if got := tools.Match(tt.pattern, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func globRegexp(pattern string) *regexp.Regexp {
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^(?s:` + strings.Join(parts, ".*") + `)$`)
}

// FuzzMatch checks Match against the regexp the folding plugin's upstream
// builds from a keep pattern (`*` becomes `.*`, the rest literal, anchored).
func FuzzMatch(f *testing.F) {
	f.Add("mcp__*", "mcp__github__x")
	f.Add("a*b*c", "aXbYc")
	f.Add("ab*ba", "aba")
	f.Add("*", "")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return // regexp reads invalid bytes as U+FFFD; Match compares bytes
		}
		if got, want := tools.Match(pattern, name), globRegexp(pattern).MatchString(name); got != want {
			t.Fatalf("Match(%q, %q) = %v, regexp says %v", pattern, name, got, want)
		}
	})
}

func TestMaskAllows(t *testing.T) {
	tests := []struct {
		mask *tools.Mask
		name string
		want bool
	}{
		{nil, "x", true},
		{&tools.Mask{}, "x", true},
		{&tools.Mask{Allow: []string{"mcp__*"}}, "x", false},
		{&tools.Mask{Allow: []string{"mcp__*"}}, "mcp__a__b", true},
		{&tools.Mask{Deny: []string{"mcp__a__*"}}, "mcp__a__b", false},
		{&tools.Mask{Deny: []string{"mcp__a__*"}}, "mcp__b__b", true},
		{&tools.Mask{Allow: []string{"*"}, Deny: []string{"*"}}, "x", false},
		{&tools.Mask{Allow: []string{"read", "write"}}, "write", true},
	}
	for _, tt := range tests {
		if got := tt.mask.Allows(tt.name); got != tt.want {
			t.Errorf("%+v.Allows(%q) = %v, want %v", tt.mask, tt.name, got, tt.want)
		}
	}
}

func TestCallerRestrict(t *testing.T) {
	session := tools.Caller{Kind: "gateway", ID: "s1", Mask: &tools.Mask{Allow: []string{"mcp__*", "read"}}}
	agent := session.Restrict(tools.Mask{Deny: []string{"mcp__github__*"}})
	sub := agent.Restrict(tools.Mask{Allow: []string{"*"}}) // cannot widen
	tests := []struct {
		name                string
		session, agent, sub bool
	}{
		{"read", true, true, true},
		{"write", false, false, false},
		{"mcp__web__fetch", true, true, true},
		{"mcp__github__push", true, false, false},
	}
	for _, tt := range tests {
		got := [3]bool{session.Mask.Allows(tt.name), agent.Mask.Allows(tt.name), sub.Mask.Allows(tt.name)}
		if want := [3]bool{tt.session, tt.agent, tt.sub}; got != want {
			t.Errorf("%s: allowed by session, agent, sub = %v, want %v", tt.name, got, want)
		}
	}
	if session.Mask.Within != nil || len(session.Mask.Deny) != 0 {
		t.Error("Restrict changed the original caller's mask")
	}
	if agent.Kind != "gateway" || agent.ID != "s1" {
		t.Errorf("Restrict changed who the caller is: %+v", agent)
	}
	if got := (tools.Caller{}).Restrict(tools.Mask{Allow: []string{"read"}}); !got.Mask.Allows("read") || got.Mask.Allows("write") {
		t.Error("Restrict of an unrestricted caller")
	}
}
