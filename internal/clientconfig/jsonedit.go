package clientconfig

// The JSON edits: a member set (inserted in its object's style, or its
// value replaced) or deleted, by splicing text at the parsed offsets.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

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
		// follows the new member; blanks alone are replaced, else they
		// would be a line of trailing spaces.
		if len(bytes.TrimSpace(text[o.start+1:o.end-1])) == 0 {
			return splice(text, o.start+1, o.end-1, ins)
		}
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

// rawJSON is a value's text as a file held it (undo puts an entry back
// as it was written, comments and layout with it).
type rawJSON []byte

// render writes v as JSON: with unit != "" one member or element per line,
// indented from ind; else on one line. Strings, numbers, booleans,
// []string, []any, ordered and rawJSON (as it is) only.
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
		case rawJSON:
			b.Write(v)
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
