package mdterm

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// style is a set of text attributes.
type style uint16

const (
	sBold style = 1 << iota
	sItalic
	sStrike
	sUnderline
	sCode
	sLink
	sFaint
	sHeading
	sMarker
)

// sgr is each attribute's SGR parameters, in this order.
var sgr = [...]struct {
	s    style
	code string
}{
	{sBold, "1"}, {sFaint, "2"}, {sItalic, "3"}, {sUnderline, "4"}, {sStrike, "9"},
	{sCode, "36"}, {sLink, "34;4"}, {sHeading, "1;35"}, {sMarker, "33"},
}

// style wraps text in the SGR codes of st, when styled.
func (r *renderer) style(text string, st style) string {
	if !r.styled || st == 0 || text == "" {
		return text
	}
	var codes []string
	for _, c := range sgr {
		if st&c.s != 0 {
			codes = append(codes, c.code)
		}
	}
	return "\x1b[" + strings.Join(codes, ";") + "m" + text + "\x1b[0m"
}

// span is a run of text in one style.
type span struct {
	text string
	st   style
}

// inline parses a paragraph's text into styled spans: code spans,
// emphasis (** __ * _ ~~), links and images, autolinks, backslash
// escapes. Unmatched marks stay as written.
func (r *renderer) inline(text string, base style) []span {
	p := inlineParser{r: r}
	p.parse(text, base, 0)
	p.end()
	return p.out
}

type inlineParser struct {
	r    *renderer
	out  []span
	last strings.Builder // the text of out's last span, growing
}

func (p *inlineParser) add(text string, st style) {
	if text == "" {
		return
	}
	if n := len(p.out); n > 0 && p.out[n-1].st == st {
		p.last.WriteString(text)
		return
	}
	p.end()
	p.out = append(p.out, span{st: st})
	p.last.WriteString(text)
}

// end sets the last span's text from its builder.
func (p *inlineParser) end() {
	if n := len(p.out); n > 0 {
		p.out[n-1].text = p.last.String()
		p.last.Reset()
	}
}

// maxNest bounds emphasis inside emphasis: deeper marks stay as written.
const maxNest = 6

// parse reads s in style st. Each search for a closing mark starts after
// its opening one and a failed search is remembered, so a text of many
// unmatched marks costs one pass per kind of mark, not one per mark.
func (p *inlineParser) parse(s string, st style, nest int) {
	noClose := map[string]int{} // a mark's closing searched from here on and not found
	plain := 0
	flush := func(i int) { p.add(s[plain:i], st) }
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isPunct(s[i+1]):
			flush(i)
			p.add(s[i+1:i+2], st)
			i += 2
			plain = i
			continue
		case c == '\n':
			flush(i)
			p.add("\n", st)
			i++
			plain = i
			continue
		case c == '`':
			n := run(s[i:], '`')
			mark := s[i : i+n]
			end := -1
			if last, seen := noClose[mark]; !seen || i+n < last {
				if end = closingRun(s[i+n:], n); end < 0 {
					noClose[mark] = i + n
				}
			}
			if end >= 0 {
				flush(i)
				code := s[i+n : i+n+end]
				if len(code) > 2 && code[0] == ' ' && code[len(code)-1] == ' ' {
					code = code[1 : len(code)-1]
				}
				code = strings.ReplaceAll(code, "\n", " ")
				if !p.r.styled {
					code = "`" + code + "`"
				}
				p.add(code, st|sCode)
				i += n + end + n
				plain = i
				continue
			}
			i += n
			continue
		case c == '<':
			if end := strings.IndexByte(s[i:], '>'); end > 0 {
				if u := s[i+1 : i+end]; isAutolink(u) {
					flush(i)
					p.add(u, st|sLink)
					i += end + 1
					plain = i
					continue
				}
			}
		case c == '[' || (c == '!' && strings.HasPrefix(s[i+1:], "[")):
			if text, url, n := link(s[i:]); n > 0 {
				flush(i)
				if c == '!' {
					p.add("[image: ", st|sFaint)
					p.add(text, st|sFaint)
					p.add("]", st|sFaint)
				} else if nest < maxNest {
					p.parse(text, st|sLink, nest+1)
				} else {
					p.add(text, st|sLink)
				}
				if url != "" && url != text {
					p.add(" (", st)
					p.add(url, st|sFaint)
					p.add(")", st)
				}
				i += n
				plain = i
				continue
			}
		case (c == '*' || c == '_' || c == '~') && nest < maxNest:
			n := run(s[i:], c)
			mark := s[i : i+n]
			em, ok := emphasis(c, n)
			if ok && opens(s, i, n) {
				from := i + n
				if last, seen := noClose[mark]; !seen || from < last {
					if end := closing(s, from, mark); end >= 0 {
						flush(i)
						p.parse(s[from:end], st|em, nest+1)
						i = end + n
						plain = i
						continue
					}
					noClose[mark] = from
				}
			}
			i += n
			continue
		}
		i++
	}
	flush(len(s))
}

// emphasis is the style a run of n marks c makes.
func emphasis(c byte, n int) (style, bool) {
	switch {
	case c == '~' && n == 2:
		return sStrike, true
	case c == '~':
		return 0, false
	case n == 1:
		return sItalic, true
	case n == 2:
		return sBold, true
	case n == 3:
		return sBold | sItalic, true
	}
	return 0, false
}

// opens says whether the run of n marks at s[i] can open emphasis: not
// followed by a space, and for _ not inside a word (snake_case stays).
func opens(s string, i, n int) bool {
	if i+n >= len(s) || s[i+n] == ' ' || s[i+n] == '\n' {
		return false
	}
	if s[i] == '_' && i > 0 && isWordByte(s[i-1]) {
		return false
	}
	return true
}

// closing finds the run equal to mark that closes emphasis opened before
// from: not preceded by a space, exactly as long, and for _ not followed
// by a word character. -1 when there is none.
func closing(s string, from int, mark string) int {
	for j := from; j < len(s); {
		k := strings.Index(s[j:], mark)
		if k < 0 {
			return -1
		}
		at := j + k
		n := run(s[at:], mark[0])
		ok := n == len(mark) && at > from && s[at-1] != ' ' && s[at-1] != '\n'
		if ok && mark[0] == '_' && at+n < len(s) && isWordByte(s[at+n]) {
			ok = false
		}
		if ok {
			return at
		}
		j = at + n
	}
	return -1
}

// run is the count of c that s starts with.
func run(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// closingRun finds a run of exactly n backticks in s, -1 if none.
func closingRun(s string, n int) int {
	for j := 0; j < len(s); {
		k := strings.IndexByte(s[j:], '`')
		if k < 0 {
			return -1
		}
		m := run(s[j+k:], '`')
		if m == n {
			return j + k
		}
		j += k + m
	}
	return -1
}

// maxLink bounds a link's text and its destination: a [ further from its
// ] or a ( from its ) is not a link, so that text of many [ costs a
// bounded look ahead for each.
const maxLink = 1000

// link reads [text](url) or ![text](url) at the start of s: its text, its
// destination and its length, 0 when it is not one. The text's brackets
// nest; the destination may hold balanced parentheses and a title.
func link(s string) (text, url string, n int) {
	start := 1
	if s[0] == '!' {
		start = 2
	}
	depth := 0
	end := -1
	for i := start; i < min(len(s), start+maxLink) && end < 0; i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			if depth == 0 {
				end = i
			}
			depth--
		case '\n':
			if i+1 < len(s) && s[i+1] == '\n' {
				return "", "", 0
			}
		}
	}
	if end < 0 || end+1 >= len(s) || s[end+1] != '(' {
		return "", "", 0
	}
	depth = 0
	for i := end + 2; i < min(len(s), end+2+maxLink); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				dest := strings.TrimSpace(s[end+2 : i])
				if f := strings.IndexAny(dest, " \n"); f >= 0 {
					dest = dest[:f] // a title follows
				}
				return s[start:end], strings.Trim(dest, "<>"), i + 1
			}
			depth--
		case ' ', '\n':
			// a space ends the destination; a title may follow
		}
	}
	return "", "", 0
}

// isAutolink says whether <u> is an autolink: a scheme and no spaces, or
// an email address.
func isAutolink(u string) bool {
	if u == "" || strings.ContainsAny(u, " <>\n") {
		return false
	}
	if i := strings.Index(u, ":"); i > 1 {
		for _, r := range u[:i] {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '.' || r == '-') {
				return false
			}
		}
		return true
	}
	at := strings.IndexByte(u, '@')
	return at > 0 && strings.Contains(u[at:], ".")
}

func isPunct(c byte) bool {
	return c < utf8.RuneSelf && unicode.IsPunct(rune(c)) || strings.IndexByte("$+<=>^`|~", c) >= 0
}

func isWordByte(c byte) bool {
	return c >= 0x80 || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// wrap lays spans out in lines of at most width columns, breaking at
// spaces; a word longer than a line has a line of its own.
func (r *renderer) wrap(spans []span, width int) []string {
	var lines []string
	var line strings.Builder
	w := 0          // the line's width
	var word []span // the word being read, its pieces in their styles
	ww := 0         // its width
	space := false  // a space is pending before the next word
	put := func() {
		if len(word) == 0 {
			return
		}
		if w > 0 && w+1+ww > width {
			lines = append(lines, line.String())
			line.Reset()
			w = 0
		} else if w > 0 && space {
			line.WriteByte(' ')
			w++
		}
		for _, p := range word {
			line.WriteString(r.style(p.text, p.st))
		}
		w += ww
		word, ww, space = word[:0], 0, false
	}
	for _, sp := range spans {
		for len(sp.text) > 0 {
			i := strings.IndexAny(sp.text, " \n")
			piece := sp.text
			if i >= 0 {
				piece = sp.text[:i]
			}
			if piece != "" {
				if n := len(word); n > 0 && word[n-1].st == sp.st {
					word[n-1].text += piece
				} else {
					word = append(word, span{piece, sp.st})
				}
				ww += displayWidth(piece)
			}
			if i < 0 {
				break
			}
			if len(word) > 0 {
				put()
			}
			if sp.text[i] == '\n' {
				lines = append(lines, line.String())
				line.Reset()
				w, space = 0, false
			} else if w > 0 {
				space = true
			}
			sp.text = sp.text[i+1:]
		}
	}
	put()
	if line.Len() > 0 {
		lines = append(lines, line.String())
	}
	return lines
}

// displayWidth is s's width in columns, rune by rune (as chat measures
// the rows a text takes), ASCII without a lookup.
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		if r >= ' ' && r < utf8.RuneSelf {
			w++
			continue
		}
		w += runewidth.RuneWidth(r)
	}
	return w
}
