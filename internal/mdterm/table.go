package mdterm

import (
	"strings"
)

type align int

const (
	alignLeft align = iota
	alignCenter
	alignRight
)

// delimiterRow reads a table's delimiter row (| :--- | :---: | ---: |),
// nil when l is not one.
func delimiterRow(l string) []align {
	cells := cells(l)
	if len(cells) == 0 {
		return nil
	}
	out := make([]align, len(cells))
	for i, c := range cells {
		c = strings.TrimSpace(c)
		left, right := strings.HasPrefix(c, ":"), strings.HasSuffix(c, ":")
		dashes := strings.Trim(c, ":")
		if dashes == "" || strings.Trim(dashes, "-") != "" {
			return nil
		}
		switch {
		case left && right && len(c) > 1:
			out[i] = alignCenter
		case right:
			out[i] = alignRight
		}
	}
	return out
}

// cells splits a table row at its pipes (not escaped, not in a code span).
func cells(l string) []string {
	t := strings.TrimSpace(l)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, "\\|") {
		t = t[:len(t)-1]
	}
	var out []string
	start, code := 0, false
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++
		case '`':
			code = !code
		case '|':
			if !code {
				out = append(out, t[start:i])
				start = i + 1
			}
		}
	}
	return append(out, t[start:])
}

// table renders the table whose header is lines[i]: columns padded to
// their widest cell, the header in bold over a rule. A table wider than
// width is written row by row, its cells apart by a bar, for the terminal
// to wrap. It returns the line after the table.
func (r *renderer) table(lines []string, i, width int) ([]string, int) {
	aligns := delimiterRow(lines[i+1])
	rows := [][]string{cells(lines[i])}
	j := i + 2
	for ; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if t == "" || !strings.Contains(t, "|") || startsBlock(t) {
			break
		}
		rows = append(rows, cells(lines[j]))
	}
	cols := len(aligns)
	// each cell rendered on one line, and its width
	text := make([][]string, len(rows))
	widths := make([]int, cols)
	for k, row := range rows {
		text[k] = make([]string, cols)
		for c := 0; c < cols; c++ {
			if c >= len(row) {
				continue
			}
			st := style(0)
			if k == 0 {
				st = sBold
			}
			var b strings.Builder
			for _, sp := range r.inline(strings.TrimSpace(row[c]), st) {
				b.WriteString(r.style(strings.ReplaceAll(sp.text, "\n", " "), sp.st))
			}
			text[k][c] = b.String()
			widths[c] = max(widths[c], displayWidth(stripSGR(text[k][c])))
		}
	}
	total := 3 * (cols - 1)
	for _, w := range widths {
		total += w
	}
	bar := r.style("│", sFaint)
	var out []string
	for k, row := range text {
		var b strings.Builder
		for c, cell := range row {
			if c > 0 {
				b.WriteString(" " + bar + " ")
			}
			pad := widths[c] - displayWidth(stripSGR(cell))
			if total > width {
				pad = 0
			}
			switch aligns[c] {
			case alignRight:
				b.WriteString(strings.Repeat(" ", pad) + cell)
			case alignCenter:
				b.WriteString(strings.Repeat(" ", pad/2) + cell + strings.Repeat(" ", pad-pad/2))
			default:
				b.WriteString(cell + strings.Repeat(" ", pad))
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
		if k == 0 && total <= width {
			parts := make([]string, cols)
			for c, w := range widths {
				parts[c] = strings.Repeat("─", w)
			}
			out = append(out, r.style(strings.Join(parts, "─┼─"), sFaint))
		}
	}
	return out, j
}
