package clientconfig

// A JSON (and JSON-with-comments) editor that works on the text: it parses
// the file into nodes that remember their byte offsets, and an edit splices
// new text in at those offsets, so that every other byte of the file (its
// comments, its indentation, its key order) stays as it was.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
		switch p.text[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '\n':
			return "", p.fail(start, "a string that does not end on its line")
		case '"':
			p.pos++
			var s string
			if err := json.Unmarshal(p.text[start:p.pos], &s); err != nil {
				return "", p.fail(start, "bad string: %v", err)
			}
			return s, nil
		}
		p.pos++
	}
	return "", p.fail(start, "a string that does not end")
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
	default:
		dec := json.NewDecoder(bytes.NewReader(text[n.start:n.end]))
		dec.UseNumber()
		var v any
		err := dec.Decode(&v)
		return v, err
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

// lookup returns the object at path under root, or nil when a step is
// missing; a step that is not an object is an error naming its line.
func lookup(text []byte, root *jnode, path []string) (*jnode, error) {
	n := root
	for i, k := range path {
		if n.kind != '{' {
			l, _ := lineCol(text, n.start)
			return nil, fmt.Errorf("line %d: %q is not a JSON object", l, strings.Join(path[:i], "."))
		}
		m := n.member(k)
		if m == nil {
			return nil, nil
		}
		n = m.value
	}
	if n.kind != '{' {
		l, _ := lineCol(text, n.start)
		return nil, fmt.Errorf("line %d: %q is not a JSON object", l, strings.Join(path, "."))
	}
	return n, nil
}

// indentUnit guesses the file's indentation step from the root object's
// first member, else two spaces.
func indentUnit(text []byte, root *jnode) string {
	if root.kind == '{' && len(root.members) > 0 {
		ind := lineIndent(text, root.members[0].keyStart)
		if ind != "" && onOwnLine(text, root.members[0].keyStart) {
			return ind
		}
	}
	return "  "
}

// lineIndent returns the white space that begins off's line.
func lineIndent(text []byte, off int) string {
	ls := bytes.LastIndexByte(text[:off], '\n') + 1
	e := ls
	for e < len(text) && (text[e] == ' ' || text[e] == '\t') {
		e++
	}
	return string(text[ls:e])
}

// onOwnLine reports whether only white space precedes off on its line.
func onOwnLine(text []byte, off int) bool {
	ls := bytes.LastIndexByte(text[:off], '\n') + 1
	return len(bytes.TrimLeft(text[ls:off], " \t")) == 0
}

// restOfLine returns the offset of the end of off's line when only white
// space and comments follow off on it, else -1.
func restOfLine(text []byte, off int) int {
	for off < len(text) {
		switch c := text[off]; {
		case c == ' ' || c == '\t' || c == '\r':
			off++
		case c == '\n':
			return off
		case c == '/' && off+1 < len(text) && text[off+1] == '/':
			nl := bytes.IndexByte(text[off:], '\n')
			if nl < 0 {
				return len(text)
			}
			return off + nl
		case c == '/' && off+1 < len(text) && text[off+1] == '*':
			end := bytes.Index(text[off+2:], []byte("*/"))
			if end < 0 || bytes.IndexByte(text[off:off+2+end], '\n') >= 0 {
				return -1
			}
			off += 2 + end + 2
		default:
			return -1
		}
	}
	return len(text)
}

// setMember returns text with key set to value in the object at path,
// creating the objects on the path that are missing. An existing member's
// value is replaced in place; a new one goes last.
func setMember(text []byte, root *jnode, path []string, key string, value any) ([]byte, error) {
	if root.kind != '{' {
		return nil, errors.New("the file is not a JSON object")
	}
	unit := indentUnit(text, root)
	obj := root
	for i, k := range path {
		m := obj.member(k)
		if m == nil {
			// Build the rest of the path as one new member.
			var v any = ordered{{key, value}}
			for j := len(path) - 1; j > i; j-- {
				v = ordered{{path[j], v}}
			}
			return insertMember(text, obj, k, v, unit), nil
		}
		if m.value.kind != '{' {
			l, _ := lineCol(text, m.value.start)
			return nil, fmt.Errorf("line %d: %q is not a JSON object", l, strings.Join(path[:i+1], "."))
		}
		obj = m.value
	}
	if m := obj.member(key); m != nil {
		ind := lineIndent(text, m.keyStart)
		if !onOwnLine(text, m.keyStart) || !multiline(text, obj) {
			return splice(text, m.value.start, m.value.end, render(value, "", "")), nil
		}
		return splice(text, m.value.start, m.value.end, render(value, ind, unit)), nil
	}
	return insertMember(text, obj, key, value, unit), nil
}

// multiline reports whether object o spans more than one line.
func multiline(text []byte, o *jnode) bool {
	return bytes.IndexByte(text[o.start:o.end], '\n') >= 0
}

// insertMember returns text with "key": value added as o's last member,
// written in o's style: one member per line at its members' indentation,
// or on one line when o is on one line.
func insertMember(text []byte, o *jnode, key string, value any, unit string) []byte {
	k, _ := marshal(key)
	if !multiline(text, o) && len(o.members) > 0 {
		last := o.members[len(o.members)-1]
		at := last.value.end
		ins := ", " + string(k) + ": " + render(value, "", "")
		if last.comma >= 0 {
			at, ins = last.comma+1, " "+string(k)+": "+render(value, "", "")+","
		}
		return splice(text, at, at, ins)
	}
	if len(o.members) == 0 {
		outer := lineIndent(text, o.start)
		ind := outer + unit
		ins := "\n" + ind + string(k) + ": " + render(value, ind, unit) + "\n" + outer
		// Just inside the braces: anything already there (a comment)
		// follows the new member.
		return splice(text, o.start+1, o.start+1, ins)
	}
	last := o.members[len(o.members)-1]
	ind := lineIndent(text, last.keyStart)
	member := string(k) + ": " + render(value, ind, unit)
	after := last.value.end
	if last.comma >= 0 {
		after = last.comma + 1
	}
	if eol := restOfLine(text, after); eol >= 0 {
		// The new member on a line of its own, after the last member's
		// line (and its comment).
		ins := "\n" + ind + member
		if last.comma >= 0 {
			ins += ","
			return splice(text, eol, eol, ins)
		}
		out := splice(text, eol, eol, ins)
		return splice(out, after, after, ",")
	}
	if last.comma >= 0 {
		return splice(text, after, after, "\n"+ind+member+",")
	}
	return splice(text, after, after, ",\n"+ind+member)
}

// deleteMember returns text without member key of the object at path;
// unchanged when there is none. The member's lines go with it when it has
// them to itself, and the comma that separated it.
func deleteMember(text []byte, root *jnode, path []string, key string) ([]byte, error) {
	obj, err := lookup(text, root, path)
	if err != nil || obj == nil {
		return text, err
	}
	idx := -1
	for i, m := range obj.members {
		if m.key == key {
			idx = i
		}
	}
	if idx < 0 {
		return text, nil
	}
	m := obj.members[idx]
	s, e := m.keyStart, m.value.end
	if m.comma >= 0 {
		e = m.comma + 1
	}
	eol := restOfLine(text, e)
	if onOwnLine(text, s) && eol >= 0 {
		s = bytes.LastIndexByte(text[:s], '\n') + 1
		e = min(eol+1, len(text))
		if eol == len(text) {
			e = eol
		}
	} else {
		// On a shared line: take the space after it too.
		for e < len(text) && (text[e] == ' ' || text[e] == '\t') && m.comma >= 0 {
			e++
		}
	}
	if m.comma < 0 && idx > 0 {
		// The last member: the comma before it goes instead.
		prev := obj.members[idx-1]
		if !multiline(text, obj) {
			return splice(text, prev.value.end, e, ""), nil
		}
		out := splice(text, s, e, "")
		return splice(out, prev.comma, prev.comma+1, ""), nil
	}
	return splice(text, s, e, ""), nil
}

// splice replaces text[s:e] with ins, in a new slice.
func splice(text []byte, s, e int, ins string) []byte {
	out := make([]byte, 0, len(text)-(e-s)+len(ins))
	out = append(out, text[:s]...)
	out = append(out, ins...)
	return append(out, text[e:]...)
}

// ordered is a JSON object whose members keep their order.
type ordered []kv

type kv struct {
	k string
	v any
}

// marshal encodes v as JSON without escaping <, > and & (paths and URLs
// stay readable).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// render writes v as JSON: with unit != "" one member or element per line,
// indented from ind; else on one line. Strings, numbers, booleans,
// []string, []any and ordered only.
func render(v any, ind, unit string) string {
	var b strings.Builder
	var write func(v any, ind string)
	write = func(v any, ind string) {
		nl, sep := "", ", "
		if unit != "" {
			nl, sep = "\n", ","
		}
		switch v := v.(type) {
		case ordered:
			if len(v) == 0 {
				b.WriteString("{}")
				return
			}
			b.WriteString("{")
			for i, m := range v {
				if i > 0 {
					b.WriteString(sep)
				}
				b.WriteString(nl)
				if unit != "" {
					b.WriteString(ind + unit)
				}
				k, _ := marshal(m.k)
				b.Write(k)
				b.WriteString(": ")
				write(m.v, ind+unit)
			}
			b.WriteString(nl)
			if unit != "" {
				b.WriteString(ind)
			}
			b.WriteString("}")
		case []string:
			// Arguments read best on one line, as clients write them.
			b.WriteString("[")
			for i, s := range v {
				if i > 0 {
					b.WriteString(", ")
				}
				q, _ := marshal(s)
				b.Write(q)
			}
			b.WriteString("]")
		default:
			q, _ := marshal(v)
			b.Write(q)
		}
	}
	write(v, ind)
	return b.String()
}

// toPlain converts ordered values to what decodeJSON yields, for checks.
func toPlain(v any) any {
	switch v := v.(type) {
	case ordered:
		m := map[string]any{}
		for _, e := range v {
			m[e.k] = toPlain(e.v)
		}
		return m
	case []string:
		a := []any{}
		for _, s := range v {
			a = append(a, s)
		}
		return a
	case bool, string:
		return v
	case int:
		return json.Number(fmt.Sprint(v))
	}
	return v
}
