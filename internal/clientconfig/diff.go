package clientconfig

import (
	"bytes"
	"fmt"
	"strings"
)

// context is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// maxDiffCells bounds the line-matching table; a larger change is shown
// as all of its old lines removed and its new lines added.
const maxDiffCells = 4 << 20

// unifiedDiff returns the unified diff of old and new, named name; "" when
// they are equal.
func unifiedDiff(name string, old, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	// Edits are local: match the common head and tail first, so the table
	// covers only the changed middle of a large file.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]byte, 0, len(a)+len(b)) // '=', '-', '+'
	for range pre {
		ops = append(ops, '=')
	}
	ops = append(ops, lcsOps(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for range suf {
		ops = append(ops, '=')
	}
	var out strings.Builder
	fromName, toName := name, name
	if len(old) == 0 {
		fromName = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", fromName, toName)
	// Walk the ops, cutting hunks around changes.
	i := 0
	for i < len(ops) {
		if ops[i] == '=' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for end < len(ops) {
			if ops[end] != '=' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run] == '=' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		ai, bi := 0, 0
		for _, op := range ops[:start] {
			if op != '+' {
				ai++
			}
			if op != '-' {
				bi++
			}
		}
		var body strings.Builder
		na, nb := 0, 0
		for _, op := range ops[start:end] {
			switch op {
			case '=':
				body.WriteString(" " + a[ai+na] + "\n")
				na++
				nb++
			case '-':
				body.WriteString("-" + a[ai+na] + "\n")
				na++
			case '+':
				body.WriteString("+" + b[bi+nb] + "\n")
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n%s", hunkRange(ai, na), hunkRange(bi, nb), body.String())
		i = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return s
}

// lcsOps matches a and b by a longest common subsequence of lines.
func lcsOps(a, b []string) []byte {
	var ops []byte
	if len(a)*len(b) > maxDiffCells {
		for range a {
			ops = append(ops, '-')
		}
		for range b {
			ops = append(ops, '+')
		}
		return ops
	}
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, len(a)+1)
	for i := range l {
		l[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			ops = append(ops, '=')
			i++
			j++
		case l[i+1][j] >= l[i][j+1]:
			ops = append(ops, '-')
			i++
		default:
			ops = append(ops, '+')
			j++
		}
	}
	for ; i < len(a); i++ {
		ops = append(ops, '-')
	}
	for ; j < len(b); j++ {
		ops = append(ops, '+')
	}
	return ops
}
