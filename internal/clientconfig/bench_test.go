package clientconfig

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkPrepareLargeClaudeJSON: connect's plan (parse, edit, check,
// diff) of a ~/.claude.json grown to 3 MB by its project history.
func BenchmarkPrepareLargeClaudeJSON(b *testing.B) {
	o, file, _ := setup(b, "claude-code", fixtureCmd)
	var sb strings.Builder
	sb.WriteString("{\n  \"projects\": {\n")
	for i := range 20000 {
		fmt.Fprintf(&sb, "    \"/home/dev/src/p%d\": {\n      \"allowedTools\": [],\n      \"history\": [{\"display\": \"fix the build %d\", \"pastedContents\": {}}],\n      \"mcpServers\": {}\n    },\n", i, i)
	}
	sb.WriteString("    \"/last\": {}\n  },\n  \"mcpServers\": {\"fixture\": {\"command\": \"x\"}}\n}\n")
	if err := os.WriteFile(file, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	for b.Loop() {
		p, err := Prepare(o)
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Diff()
	}
}
