package mdterm

import (
	"strconv"
	"strings"
)

// marker is a list item's start on its line.
type marker struct {
	ordered bool
	number  int // an ordered item's
	indent  int // the marker's column
	content int // the column its content starts at
}

// listMarker reads the list marker l starts with (up to 3 spaces in, a
// bullet - * + or a number of at most 9 digits with . or ), then a space
// or the line's end), nil when it has none.
func listMarker(l string) *marker {
	ind := indent(l)
	if ind > 3 {
		return nil
	}
	rest := l[ind:]
	m := &marker{indent: ind}
	n := 0
	switch {
	case rest == "":
		return nil
	case strings.ContainsAny(rest[:1], "-*+"):
		n = 1
		if rule(strings.TrimSpace(rest)) {
			return nil // "- - -" is a rule
		}
	default:
		for n < len(rest) && n < 9 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 0 || n >= len(rest) || (rest[n] != '.' && rest[n] != ')') {
			return nil
		}
		m.ordered = true
		m.number, _ = strconv.Atoi(rest[:n])
		n++
	}
	after := rest[n:]
	if after != "" && after[0] != ' ' {
		return nil
	}
	spaces := indent(after)
	if spaces == 0 || spaces > 4 || spaces == len(after) {
		spaces = 1 // a blank start or indented code: one space belongs to the marker
	}
	m.content = ind + n + spaces
	return m
}

// list renders the list starting at lines[i]: its items, each with its
// own blocks, the nested lists among them. It returns the line after.
func (r *renderer) list(lines []string, i, width, depth int) ([]string, int) {
	first := listMarker(lines[i])
	type item struct {
		m     *marker
		lines []string
	}
	var items []item
	for i < len(lines) {
		m := listMarker(lines[i])
		if m == nil || m.ordered != first.ordered {
			break
		}
		it := item{m: m, lines: []string{lines[i][min(m.content, len(lines[i])):]}}
		i++
		blank := false
		for i < len(lines) {
			l := lines[i]
			t := strings.TrimSpace(l)
			switch {
			case t == "":
				blank = true
				it.lines = append(it.lines, "")
				i++
				continue
			case indent(l) >= m.content:
				it.lines = append(it.lines, l[m.content:])
				blank = false
				i++
				continue
			case !blank && listMarker(l) == nil && !startsBlock(t):
				// a lazy continuation of the item's paragraph
				it.lines = append(it.lines, t)
				i++
				continue
			}
			break
		}
		for len(it.lines) > 0 && it.lines[len(it.lines)-1] == "" {
			it.lines = it.lines[:len(it.lines)-1]
		}
		items = append(items, it)
		// the list goes on after blank lines only with another item
		if i < len(lines) && strings.TrimSpace(lines[i-1]) == "" {
			if m := listMarker(lines[i]); m == nil || m.ordered != first.ordered {
				break
			}
		}
	}
	numWidth := len(strconv.Itoa(first.number + len(items) - 1))
	var out []string
	for k, it := range items {
		mark := "•"
		if first.ordered {
			n := strconv.Itoa(first.number + k)
			mark = strings.Repeat(" ", numWidth-len(n)) + n + "."
		}
		body := it.lines
		if len(body) > 0 {
			// a task item's box in place of its bullet
			switch {
			case strings.HasPrefix(body[0], "[ ] "):
				mark, body[0] = "☐", body[0][4:]
			case strings.HasPrefix(body[0], "[x] ") || strings.HasPrefix(body[0], "[X] "):
				mark, body[0] = "☑", body[0][4:]
			}
		}
		pad := strings.Repeat(" ", displayWidth(mark)+1)
		sub := tight(r.blocks(body, width-len(pad), depth+1))
		if len(sub) == 0 {
			sub = []string{""}
		}
		for n, l := range sub {
			p := pad
			if n == 0 {
				p = r.style(mark, sMarker) + " "
			}
			out = append(out, strings.TrimRight(p+l, " "))
		}
	}
	return out, i
}

// tight drops the blank line between an item's paragraph and a list
// nested in it, so that a tight list stays tight.
func tight(lines []string) []string {
	out := lines[:0:0]
	for k, l := range lines {
		if l == "" && k+1 < len(lines) && k > 0 && isItemLine(lines[k+1]) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// isItemLine says whether a rendered line starts a list item.
func isItemLine(l string) bool {
	l = stripSGR(l)
	for _, m := range []string{"• ", "☐ ", "☑ "} {
		if strings.HasPrefix(l, m) {
			return true
		}
	}
	t := strings.TrimLeft(l, " ")
	n := len(t) - len(strings.TrimLeft(t, "0123456789"))
	return n > 0 && strings.HasPrefix(t[n:], ". ")
}

// stripSGR drops the SGR codes this package writes.
func stripSGR(l string) string {
	for {
		i := strings.Index(l, "\x1b[")
		if i < 0 {
			return l
		}
		j := strings.IndexByte(l[i:], 'm')
		if j < 0 {
			return l
		}
		l = l[:i] + l[i+j+1:]
	}
}
