// Package mdterm renders Markdown for a terminal: headings, emphasis,
// code spans and fenced or indented code (without syntax highlighting),
// bullet, ordered and task lists, block quotes, links, tables and rules,
// wrapped to a width, styled with SGR codes only.
//
// It replaces glamour in chat: glamour's Markdown, HTML sanitiser and
// syntax highlighter (chroma's lexers and styles) allocated 6 MB and took
// 16 ms in package initialisation for every command dsh-host runs, where
// only chat on a terminal renders. mdterm has no package state at all.
//
// The parser is line based and forgiving, not CommonMark: what it does not
// recognise stays as written. Its input is the model's text with control
// characters already made visible (termsafe); the only escapes in its
// output are its own SGR codes.
package mdterm

import (
	"strings"
)

// Options say how to render.
type Options struct {
	Width  int  // columns to wrap text to, the margin included
	Styled bool // SGR styles (bold, colors); false writes plain text
}

const (
	margin   = "  " // the document's left margin, as glamour had it
	maxDepth = 12   // quotes and lists nested deeper stay as written
	minWidth = 16   // narrower than this, text is wrapped at this width
)

// Render returns md rendered: lines with the margin, no trailing spaces,
// ending with a newline; "" when md holds nothing to show.
func Render(md string, o Options) string {
	width := max(o.Width-2*len(margin), minWidth)
	r := renderer{styled: o.Styled}
	lines := r.blocks(splitLines(md), width, 0)
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(margin)
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

type renderer struct {
	styled bool
}

// splitLines splits md into lines with their tabs expanded to stops of 4
// (indentation decides lists and code) and without line ends.
func splitLines(md string) []string {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	md = strings.TrimRight(md, "\n")
	if md == "" {
		return nil
	}
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if strings.IndexByte(l, '\t') >= 0 {
			lines[i] = expandTabs(l)
		}
	}
	return lines
}

func expandTabs(l string) string {
	var b strings.Builder
	col := 0
	for _, r := range l {
		if r == '\t' {
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

// blocks renders lines as a sequence of blocks, a blank line between two.
func (r *renderer) blocks(lines []string, width, depth int) []string {
	var out []string
	add := func(block []string) {
		if len(block) == 0 {
			return
		}
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, block...)
	}
	for i := 0; i < len(lines); {
		l := lines[i]
		ind := indent(l)
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			i++
		case ind >= 4:
			// indented code: up to the next line indented less that is
			// not blank
			j := i
			var code []string
			for j < len(lines) && (indent(lines[j]) >= 4 || strings.TrimSpace(lines[j]) == "") {
				code = append(code, cut(lines[j], 4))
				j++
			}
			for len(code) > 0 && strings.TrimSpace(code[len(code)-1]) == "" {
				code = code[:len(code)-1]
			}
			add(r.code(code))
			i = j
		case fence(t) != "":
			f := fence(t)
			var code []string
			j := i + 1
			for ; j < len(lines); j++ {
				if c := strings.TrimSpace(lines[j]); strings.HasPrefix(c, f) && strings.Trim(c, f[:1]) == "" {
					j++
					break
				}
				code = append(code, cut(lines[j], ind))
			}
			add(r.code(code))
			i = j
		case heading(t) > 0:
			add(r.heading(t, width))
			i++
		case rule(t):
			add([]string{r.style(strings.Repeat("─", width), sFaint)})
			i++
		case t[0] == '>' && depth < maxDepth:
			j := i
			var inner []string
			for j < len(lines) {
				c := strings.TrimSpace(lines[j])
				if strings.HasPrefix(c, ">") {
					c = strings.TrimPrefix(c[1:], " ")
				} else if c == "" || startsBlock(c) {
					break
				} // else a lazy continuation of the quote's paragraph
				inner = append(inner, c)
				j++
			}
			add(r.prefix(r.blocks(inner, width-2, depth+1), r.style("│", sFaint)+" "))
			i = j
		case listMarker(l) != nil && depth < maxDepth:
			var block []string
			block, i = r.list(lines, i, width, depth)
			add(block)
		case i+1 < len(lines) && strings.Contains(t, "|") && len(delimiterRow(lines[i+1])) == len(cells(l)):
			var block []string
			block, i = r.table(lines, i, width)
			add(block)
		default:
			// a paragraph, up to a blank line or a line starting another
			// block; a setext underline makes it a heading
			j := i + 1
			level := 0
			for ; j < len(lines); j++ {
				c := strings.TrimSpace(lines[j])
				if c != "" && strings.Trim(c, "=") == "" {
					level = 1
				} else if c != "" && strings.Trim(c, "-") == "" && indent(lines[j]) < 4 {
					level = 2
				}
				if level > 0 {
					j++
					break
				}
				if c == "" || startsBlock(c) || listMarker(lines[j]) != nil {
					break
				}
			}
			text := paragraphText(lines[i : j-min(level, 1)])
			if level > 0 {
				add(r.wrap(r.inline(text, sHeading), width))
			} else {
				add(r.wrap(r.inline(text, 0), width))
			}
			i = j
		}
	}
	return out
}

// paragraphText joins a paragraph's lines: a line ending in two spaces or
// a backslash breaks the line there, others join with a space.
func paragraphText(lines []string) string {
	var b strings.Builder
	for k, l := range lines {
		l = strings.TrimLeft(l, " ")
		if k < len(lines)-1 {
			switch {
			case strings.HasSuffix(l, "  "):
				l = strings.TrimRight(l, " ") + "\n"
			case strings.HasSuffix(l, "\\") && !strings.HasSuffix(l, "\\\\"):
				l = l[:len(l)-1] + "\n"
			default:
				l = strings.TrimRight(l, " ") + " "
			}
		} else {
			l = strings.TrimRight(l, " ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// indent is the count of l's leading spaces.
func indent(l string) int {
	return len(l) - len(strings.TrimLeft(l, " "))
}

// cut drops up to n leading spaces of l.
func cut(l string, n int) string {
	return l[min(n, indent(l)):]
}

// fence is the fence a line opens (``` or ~~~ and longer), else "".
func fence(t string) string {
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(t, c+c+c) {
			n := len(t) - len(strings.TrimLeft(t, c))
			if c == "`" && strings.Contains(t[n:], "`") {
				return "" // an info string with a backtick: a code span
			}
			return t[:n]
		}
	}
	return ""
}

// heading is the level of an ATX heading line, 0 if it is not one.
func heading(t string) int {
	n := len(t) - len(strings.TrimLeft(t, "#"))
	if n < 1 || n > 6 || (len(t) > n && t[n] != ' ') {
		return 0
	}
	return n
}

// rule says whether t is a thematic break: three or more of one of - * _,
// spaces between them allowed.
func rule(t string) bool {
	if len(t) < 3 || !strings.ContainsAny(t[:1], "-*_") {
		return false
	}
	s := strings.ReplaceAll(t, " ", "")
	return len(s) >= 3 && strings.Trim(s, t[:1]) == ""
}

// startsBlock says whether a trimmed line starts a block that ends a
// paragraph.
func startsBlock(t string) bool {
	return fence(t) != "" || heading(t) > 0 || rule(t) || t[0] == '>'
}

func (r *renderer) heading(t string, width int) []string {
	n := heading(t)
	text := strings.TrimSpace(t[n:])
	// a closing sequence of #s goes, unless it is the whole text
	if s := strings.TrimRight(text, "#"); s == "" || strings.HasSuffix(s, " ") {
		text = strings.TrimSpace(s)
	}
	st := sHeading
	if n == 1 {
		st |= sUnderline
	}
	return r.wrap(r.inline(text, st), width)
}

// code renders a code block's lines as they are, indented, not wrapped.
func (r *renderer) code(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if l == "" {
			out = append(out, "")
			continue
		}
		out = append(out, "  "+r.style(l, sCode))
	}
	if len(out) == 0 {
		out = append(out, "")
	}
	return out
}

// prefix puts p before every line of lines (after their own margin).
func (r *renderer) prefix(lines []string, p string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(p+l, " ")
	}
	return out
}
