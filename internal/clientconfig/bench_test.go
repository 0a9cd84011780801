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
	o, _, size := largeClaudeJSON(b)
	b.SetBytes(size)
	for b.Loop() {
		p, err := Prepare(o)
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Diff()
	}
}

// BenchmarkUndoLargeClaudeJSON: undo's plan of that file after Claude
// Code wrote it since connect: connect's entry taken out of the current
// text (parse, edit, check, diff).
func BenchmarkUndoLargeClaudeJSON(b *testing.B) {
	o, file, size := largeClaudeJSON(b)
	p, err := Prepare(o)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Apply(); err != nil {
		b.Fatal(err)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(file, append([]byte("{\n  \"numStartups\": 13,"), text[1:]...), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for b.Loop() {
		p, err := Undo(o)
		if err != nil {
			b.Fatal(err)
		}
		if !p.reversed {
			b.Fatal("the undo restores the backup")
		}
		_ = p.Diff()
	}
}

// largeClaudeJSON is a ~/.claude.json grown to 3 MB by its project
// history, under a new HOME.
func largeClaudeJSON(b *testing.B) (Options, string, int64) {
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
	return o, file, int64(sb.Len())
}
