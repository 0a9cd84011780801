package tools

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// everythingTools are server-everything's tool names (2026.8.31).
var everythingTools = []string{
	"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference", "get-roots-list",
	"get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource", "toggle-simulated-logging",
	"toggle-subscriber-updates", "trigger-elicitation-request", "trigger-elicitation-request-async",
	"trigger-long-running-operation", "trigger-sampling-request", "trigger-sampling-request-async", "trigger-url-elicitation",
}

func TestFitToolName(t *testing.T) {
	const long = "everything-server-for-team-test" // 31 characters
	tests := []struct {
		marker, server, raw string
		limit               int
		want                string
	}{
		// Fits: itself.
		{"mcp__", "github", "search", 48, "mcp__github__search"},
		{"", "github", "search", 48, "github__search"},
		{"mcp__", long, "echo", 48, "mcp__" + long + "__echo"},
		// Replaced characters, nothing cut: FitName's name.
		{"mcp__", "fx", "admin.reset", 64, "mcp__fx__admin_reset_b885577a4582"},
		{"mcp__", "fx", "admin.reset", 48, "mcp__fx__admin_reset_b885577a4582"},
		// Too long: the server part is cut, the tool's name kept whole.
		{"mcp__", long, "get-tiny-image", 48, "mcp__everything-server-_" + serverHash(long) + "__get-tiny-image"},
		{"mcp__", long, "trigger-long-running-operation", 48, "mcp__ev_" + serverHash(long) + "__trigger-long-running-operation"},
		{"", long, "trigger-long-running-operation", 48, "everyth_" + serverHash(long) + "__trigger-long-running-operation"},
		// No room for a letter of the server: its hash alone.
		{"mcp__", long, "trigger-elicitation-request-async", 48, "mcp__" + serverHash(long) + "__trigger-elicitation-request-async"},
		// Last resort: the tool's own name does not fit whole.
		{"mcp__", long, strings.Repeat("x", 40), 48, "mcp__e__" + strings.Repeat("x", 27) + "_" + hash12(long+"\x00"+strings.Repeat("x", 40))},
		{"mcp__", long, "a.very.dotted.tool.name", 48, "mcp__every__a_very_dotted_tool_name_" + hash12(long+"\x00a.very.dotted.tool.name")},
	}
	for _, tt := range tests {
		got := FitToolName(tt.marker, tt.server, tt.raw, tt.limit)
		if got != tt.want {
			t.Errorf("FitToolName(%q, %q, %q, %d) = %q, want %q", tt.marker, tt.server, tt.raw, tt.limit, got, tt.want)
		}
		if !ValidName(got) || len(got) > tt.limit {
			t.Errorf("FitToolName(%q, %q, %q, %d) = %q: invalid or over the limit", tt.marker, tt.server, tt.raw, tt.limit, got)
		}
	}
}

func serverHash(s string) string { return hash12(s)[:serverHashLen] }

func hash12(s string) string { return withHash("", 13, s)[1:] }

// TestFitToolNameKeepsEverythingsNames: with the default limit 48 and a
// 31-character serverName, every tool of server-everything is served under
// its own name, whole (the issue: 13 of 16 were a hash).
func TestFitToolNameKeepsEverythingsNames(t *testing.T) {
	for _, marker := range []string{"mcp__", ""} {
		seen := map[string]string{}
		for _, raw := range everythingTools {
			name := FitToolName(marker, "everything-server-for-team-test", raw, 48)
			if !strings.HasSuffix(name, "__"+raw) || !strings.HasPrefix(name, marker) {
				t.Errorf("marker %q: %s is served as %q, without its own name", marker, raw, name)
			}
			if prev, dup := seen[name]; dup {
				t.Errorf("%s and %s both served as %q", prev, raw, name)
			}
			seen[name] = raw
		}
	}
}

// TestFitToolNameContract: for every limit a gateway accepts, names are
// valid, within the limit, the same when fitted again, and distinct for
// distinct tools, among them servers whose names share a long start, tool
// names that replacement makes equal, and long ones that share a start.
func TestFitToolNameContract(t *testing.T) {
	base := strings.Repeat("s", 40)
	servers := []string{"a", "gh", "everything-server-for-team-test", "everything-server-for-team-tesT", base + "1", base + "2", "srv.x", "srv_x", "日本"}
	raws := append([]string{"", "a.b", "a_b", "a b", "ab", "_", "🙂", strings.Repeat("x", 60), strings.Repeat("x", 59) + "y",
		strings.Repeat("t", 30) + "-1", strings.Repeat("t", 30) + "-2"}, everythingTools...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, 1+r.IntN(70))
		for i := range b {
			b[i] = "abc_-.Z9"[r.IntN(8)]
		}
		raws = append(raws, string(b))
	}
	for _, marker := range []string{"mcp__", ""} {
		for limit := 24; limit <= MaxNameLen; limit++ {
			seen := map[string]string{}
			for _, server := range servers {
				for _, raw := range raws {
					name := FitToolName(marker, server, raw, limit)
					id := fmt.Sprintf("%q/%q", server, raw)
					if !ValidName(name) || len(name) > limit {
						t.Fatalf("limit %d: %s is served as %q: invalid or over the limit", limit, id, name)
					}
					if again := FitToolName(marker, server, raw, limit); again != name {
						t.Fatalf("limit %d: %s: %q, then %q", limit, id, name, again)
					}
					if prev, dup := seen[name]; dup && prev != id {
						t.Fatalf("limit %d, marker %q: %s and %s are both %q", limit, marker, prev, id, name)
					}
					seen[name] = id
				}
			}
		}
	}
}
