package workspace

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a diff shows around a change.
const diffContext = 3

// Diff is a unified diff of one change from old to next (the lines
// between their common start and common end), with a few lines of
// context: what an edit shows its caller and a person asked to approve
// it.
func Diff(name, old, next string) string {
	a, b := strings.SplitAfter(old, "\n"), strings.SplitAfter(next, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	start := max(pre-diffContext, 0)
	endA, endB := min(len(a)-suf+diffContext, len(a)), min(len(b)-suf+diffContext, len(b))
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s\n+++ %s\n@@ -%d,%d +%d,%d @@\n", name, name, start+1, endA-start, start+1, endB-start)
	line := func(mark string, l string) {
		if l == "" {
			return
		}
		s.WriteString(mark + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range a[start:pre] {
		line(" ", l)
	}
	for _, l := range a[pre : len(a)-suf] {
		line("-", l)
	}
	for _, l := range b[pre : len(b)-suf] {
		line("+", l)
	}
	for _, l := range a[len(a)-suf : endA] {
		line(" ", l)
	}
	return s.String()
}
