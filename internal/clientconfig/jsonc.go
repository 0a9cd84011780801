package clientconfig

// A JSON (and JSON-with-comments) editor that works on the text: it parses
// the file into nodes that remember their byte offsets, and an edit splices
// new text in at those offsets, so that every other byte of the file (its
// comments, its indentation, its key order) stays as it was.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxDepth = 200

// jnode is one JSON value and where it is in the text.
type jnode struct {
	kind       byte // '{', '[', '"', or 'v' for a number, true, false, null
	start, end int  // the value's bytes: text[start:end]
	members    []jmember
	elems      []*jnode
}

// jmember is one member of an object.
type jmember struct {
	key      string
	keyStart int // the key's opening quote
	value    *jnode
	comma    int // the comma after the value, or -1
}

// member returns o's member named key, or nil.
func (o *jnode) member(key string) *jmember {
	for i := range o.members {
		if o.members[i].key == key {
			return &o.members[i]
		}
	}
	return nil
}

// jparser parses JSON, or JSON with comments and trailing commas when
// comments is set (VS Code's and opencode's dialect).
type jparser struct {
	text     []byte
	pos      int
	comments bool
	depth    int
}

// syntaxError says where in the text a parse failed.
type syntaxError struct {
	line, col int
	msg       string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.line, e.col, e.msg)
}

// lineCol returns the 1-based line and column of offset off in text.
func lineCol(text []byte, off int) (int, int) {
	off = min(off, len(text))
	line := 1 + bytes.Count(text[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(text[:off], '\n')
	return line, col
}

func (p *jparser) fail(off int, format string, args ...any) error {
	l, c := lineCol(p.text, off)
	return &syntaxError{l, c, fmt.Sprintf(format, args...)}
}

// parseJSON parses text as one JSON value (with comments if allowed) and
// refuses duplicate keys in any object: a client reads one of the two, and
// which one is not ours to guess.
func parseJSON(text []byte, comments bool) (*jnode, error) {
	p := &jparser{text: text, comments: comments}
	if bytes.HasPrefix(text, []byte("\xef\xbb\xbf")) {
		p.pos = 3 // a byte order mark, which some Windows editors write
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos >= len(text) {
		return nil, p.fail(p.pos, "the file is empty; want a JSON object")
	}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos < len(text) {
		return nil, p.fail(p.pos, "unexpected %q after the top-level value", text[p.pos])
	}
	return n, nil
}

// space skips white space and, when allowed, comments.
func (p *jparser) space() error {
	for p.pos < len(p.text) {
		switch c := p.text[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.text) && (p.text[p.pos+1] == '/' || p.text[p.pos+1] == '*'):
			if !p.comments {
				return p.fail(p.pos, "a comment, which this file's format (JSON) does not allow")
			}
			if p.text[p.pos+1] == '/' {
				nl := bytes.IndexByte(p.text[p.pos:], '\n')
				if nl < 0 {
					p.pos = len(p.text)
				} else {
					p.pos += nl
				}
				continue
			}
			end := bytes.Index(p.text[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.fail(p.pos, "a /* comment that does not end")
			}
			p.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *jparser) value() (*jnode, error) {
	if p.pos >= len(p.text) {
		return nil, p.fail(p.pos, "unexpected end of file")
	}
	switch c := p.text[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		start := p.pos
		if _, err := p.str(); err != nil {
			return nil, err
		}
		return &jnode{kind: '"', start: start, end: p.pos}, nil
	default:
		start := p.pos
		for p.pos < len(p.text) && strings.IndexByte("+-.0123456789eEaflnrstuE", p.text[p.pos]) >= 0 {
			p.pos++
		}
		lit := p.text[start:p.pos]
		var v any
		if len(lit) == 0 || json.Unmarshal(lit, &v) != nil {
			if len(lit) == 0 {
				return nil, p.fail(start, "unexpected %q; want a JSON value", c)
			}
			return nil, p.fail(start, "%q is not a JSON value", lit)
		}
		return &jnode{kind: 'v', start: start, end: p.pos}, nil
	}
}

// str reads a string literal and returns its value.
func (p *jparser) str() (string, error) {
	start := p.pos
	p.pos++
	for p.pos < len(p.text) {
		switch c := p.text[p.pos]; {
		case c == '\\':
			p.pos += 2
			continue
		case c < 0x20:
			return "", p.fail(p.pos, "a control character in a string (a line break must be written \\n)")
		case c == '"':
			p.pos++
			s, err := unquote(p.text[start:p.pos])
			if err != nil {
				return "", p.fail(start, "bad string: %v", err)
			}
			return s, nil
		}
		p.pos++
	}
	return "", p.fail(start, "a string that does not end")
}

// unquote decodes a string literal the parser has delimited; most have no
// escape and need no decoder.
func unquote(lit []byte) (string, error) {
	if bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err
}

func (p *jparser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail(p.pos, "nested more than %d deep", maxDepth)
	}
	return nil
}

func (p *jparser) object() (*jnode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	n := &jnode{kind: '{', start: p.pos}
	p.pos++
	seen := map[string]int{}
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.text) && p.text[p.pos] == '}' {
			if len(n.members) > 0 && n.members[len(n.members)-1].comma >= 0 && !p.comments {
				return nil, p.fail(n.members[len(n.members)-1].comma, "a trailing comma, which JSON does not allow")
			}
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if len(n.members) > 0 && n.members[len(n.members)-1].comma < 0 {
			return nil, p.fail(p.pos, "want , or } after an object member")
		}
		if p.pos >= len(p.text) || p.text[p.pos] != '"' {
			return nil, p.fail(p.pos, "want a quoted key or }")
		}
		keyStart := p.pos
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[key]; dup {
			l, _ := lineCol(p.text, prev)
			return nil, p.fail(keyStart, "key %q again (first on line %d): a client reads only one of them; remove the other", key, l)
		}
		seen[key] = keyStart
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.text) || p.text[p.pos] != ':' {
			return nil, p.fail(p.pos, "want : after key %q", key)
		}
		p.pos++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m := jmember{key: key, keyStart: keyStart, value: v, comma: -1}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.text) && p.text[p.pos] == ',' {
			m.comma = p.pos
			p.pos++
		}
		n.members = append(n.members, m)
	}
}

func (p *jparser) array() (*jnode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	n := &jnode{kind: '[', start: p.pos}
	p.pos++
	comma := true
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.text) && p.text[p.pos] == ']' {
			if comma && len(n.elems) > 0 && !p.comments {
				return nil, p.fail(p.pos, "a trailing comma, which JSON does not allow")
			}
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if !comma {
			return nil, p.fail(p.pos, "want , or ] after an array element")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		comma = p.pos < len(p.text) && p.text[p.pos] == ','
		if comma {
			p.pos++
		}
	}
}

// decodeJSON decodes the value n of text into Go values (objects as
// map[string]any, numbers as json.Number), comments left out.
func decodeJSON(text []byte, n *jnode) (any, error) {
	switch n.kind {
	case '{':
		m := map[string]any{}
		for _, mb := range n.members {
			v, err := decodeJSON(text, mb.value)
			if err != nil {
				return nil, err
			}
			m[mb.key] = v
		}
		return m, nil
	case '[':
		a := []any{}
		for _, e := range n.elems {
			v, err := decodeJSON(text, e)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		return a, nil
	case '"':
		return unquote(text[n.start:n.end])
	default:
		switch lit := string(text[n.start:n.end]); lit {
		case "true", "false":
			return lit == "true", nil
		case "null":
			return nil, nil
		default:
			return json.Number(lit), nil // checked when parsed
		}
	}
}

// plainJSON returns the value n of text as plain JSON (comments and
// trailing commas left out), for readers that take only that.
func plainJSON(text []byte, n *jnode) ([]byte, error) {
	// The importer reads servers in file order, which a map loses: write
	// objects member by member.
	var b bytes.Buffer
	var write func(n *jnode)
	write = func(n *jnode) {
		switch n.kind {
		case '{':
			b.WriteByte('{')
			for i, m := range n.members {
				if i > 0 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(m.key)
				b.Write(k)
				b.WriteByte(':')
				write(m.value)
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for i, e := range n.elems {
				if i > 0 {
					b.WriteByte(',')
				}
				write(e)
			}
			b.WriteByte(']')
		default:
			b.Write(text[n.start:n.end])
		}
	}
	write(n)
	return b.Bytes(), nil
}
