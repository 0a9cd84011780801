package settings

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/dsh-host/dsh-host/internal/yamlfield"
	yaml "go.yaml.in/yaml/v3"
)

var errEOF = io.EOF

// rewrite returns the file's bytes with section set to val (see merge).
//
// It replaces only the lines of the section (from its key to its last line
// of content; the comments and blank lines that follow belong to what comes
// next) with the section encoded anew, so every other byte of the file stays
// as it was. When the file's shape defeats line splicing (a flow-style top
// level, a section sharing an anchor with another...) the whole document is
// re-encoded instead, which keeps every value and most comments. Either way
// the result is parsed again and checked to hold exactly the old sections
// and the new value before it is returned; whole reports the second way.
func rewrite(f *file, section string, val *yaml.Node) (out []byte, whole bool, err error) {
	indent := detectIndent(f.top)
	key, _ := f.section(section)
	if out, err := splice(f, section, key, val, indent); err == nil {
		if verify(f, section, val, out) == nil {
			return out, false, nil
		}
	}
	out, err = reencode(f, section, key, val, indent)
	if err != nil {
		return nil, false, err
	}
	if err := verify(f, section, val, out); err != nil {
		return nil, false, fmt.Errorf("cannot update section %q without changing others (%v); edit the file by hand", section, err)
	}
	return out, true, nil
}

// splice replaces the section's lines, or appends the section when the file
// has none.
func splice(f *file, section string, key, val *yaml.Node, indent int) ([]byte, error) {
	if f.top != nil && f.top.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("flow-style top level")
	}
	var k yaml.Node
	if key != nil {
		k = *key
		if key.Column != 1 {
			return nil, errors.New("section key not at the start of its line")
		}
	} else {
		k = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: section}
	}
	// The head comment stays in the file above the key line, and trailing
	// comments stay after the section: neither is emitted again.
	k.HeadComment = ""
	k.FootComment = ""
	snippet, err := encodeSection(&k, stripTrailingFoot(val), indent)
	if err != nil {
		return nil, err
	}
	data := f.data
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		snippet = bytes.ReplaceAll(snippet, []byte("\n"), []byte("\r\n"))
	}
	if key == nil {
		if f.top == nil && f.doc != nil && len(f.doc.Content) > 0 {
			return nil, errors.New("the file holds a null document")
		}
		var b bytes.Buffer
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.Write(snippet)
		return b.Bytes(), nil
	}
	starts := lineStarts(data)
	startLine := key.Line - 1 // 0-based
	limitLine := len(starts)  // the line of the next section's key, or EOF
	for i := 0; i+1 < len(f.top.Content); i += 2 {
		if f.top.Content[i] == key && i+2 < len(f.top.Content) {
			limitLine = f.top.Content[i+2].Line - 1
		}
	}
	if startLine < 0 || startLine >= len(starts) || limitLine <= startLine {
		return nil, errors.New("section position out of range")
	}
	last := startLine
	for l := startLine; l < limitLine; l++ {
		if isContent(line(data, starts, l)) {
			last = l
		}
	}
	start := starts[startLine]
	end := len(data)
	if last+1 < len(starts) {
		end = starts[last+1]
	}
	var b bytes.Buffer
	b.Write(data[:start])
	b.Write(snippet)
	b.Write(data[end:])
	return b.Bytes(), nil
}

// lineStarts returns the offset of the start of every line.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func line(data []byte, starts []int, l int) []byte {
	end := len(data)
	if l+1 < len(starts) {
		end = starts[l+1]
	}
	return data[starts[l]:end]
}

// isContent reports whether a line holds YAML content, as opposed to
// nothing, a comment, or a document marker.
func isContent(l []byte) bool {
	t := bytes.TrimSpace(l)
	return len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("...")) && !bytes.Equal(t, []byte("---"))
}

// stripTrailingFoot returns val without the foot comments along its last
// branch: those lines follow the section's content, stay in the file as
// they are, and would otherwise appear twice.
func stripTrailingFoot(val *yaml.Node) *yaml.Node {
	if val == nil {
		return nil
	}
	c := *val
	c.FootComment = ""
	if n := len(c.Content); n > 0 && (c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode) {
		c.Content = append([]*yaml.Node(nil), c.Content...)
		if c.Kind == yaml.MappingNode && n >= 2 {
			k := *c.Content[n-2]
			k.FootComment = ""
			c.Content[n-2] = &k
		}
		c.Content[n-1] = stripTrailingFoot(c.Content[n-1])
	}
	return &c
}

// encodeSection renders "key: value" as top-level YAML.
func encodeSection(key, val *yaml.Node, indent int) ([]byte, error) {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{key, val}}
	return encode(m, indent)
}

func encode(n *yaml.Node, indent int) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(indent)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// reencode encodes the whole document with section set to val.
func reencode(f *file, section string, key, val *yaml.Node, indent int) ([]byte, error) {
	var doc yaml.Node
	if f.doc != nil {
		doc = *f.doc
	} else {
		doc = yaml.Node{Kind: yaml.DocumentNode}
	}
	var top *yaml.Node
	if f.top != nil {
		t := *f.top
		t.Content = append([]*yaml.Node(nil), f.top.Content...)
		t.Style &^= yaml.FlowStyle
		top = &t
	} else {
		top = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	doc.Content = []*yaml.Node{top}
	if key == nil {
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: section}, val)
	} else {
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i] == key {
				top.Content[i+1] = val
			}
		}
	}
	return encode(&doc, indent)
}

// verify checks that out parses and holds the same sections as f, in the
// same order and with the same values, except section, which holds val.
func verify(f *file, section string, val *yaml.Node, out []byte) error {
	g, err := parse("", out)
	if err != nil {
		return err
	}
	if g.top == nil {
		return errors.New("no sections after the update")
	}
	var want []*yaml.Node // key, value, key, value...
	if f.top != nil {
		want = append(want, f.top.Content...)
	}
	if k, _ := f.section(section); k == nil {
		want = append(want, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: section}, val)
	}
	if len(want) != len(g.top.Content) {
		return fmt.Errorf("%d sections became %d", len(want)/2, len(g.top.Content)/2)
	}
	for i := 0; i+1 < len(want); i += 2 {
		k, v := want[i], want[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == section {
			v = val
		}
		if err := sameNode(k, g.top.Content[i]); err != nil {
			return fmt.Errorf("key %d: %w", i/2+1, err)
		}
		if err := sameNode(v, g.top.Content[i+1]); err != nil {
			return fmt.Errorf("section %q: %w", k.Value, err)
		}
	}
	return nil
}

// sameNode reports an error unless a and b decode to equal generic values.
func sameNode(a, b *yaml.Node) error {
	var x, y any
	if err := a.Decode(&x); err != nil {
		return err
	}
	if err := b.Decode(&y); err != nil {
		return err
	}
	if reflect.DeepEqual(x, y) {
		return nil
	}
	// NaN is not equal to itself; compare such values by their encoding.
	ex, err1 := yaml.Marshal(x)
	ey, err2 := yaml.Marshal(y)
	if err1 == nil && err2 == nil && bytes.Equal(ex, ey) {
		return nil
	}
	return errors.New("value changed")
}

// detectIndent returns the indentation the file uses for nested mappings
// (2 when it has none).
func detectIndent(top *yaml.Node) int {
	if top == nil {
		return 2
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if d := v.Content[0].Column - k.Column; d >= 2 && d <= 8 {
				return d
			}
		}
	}
	return 2
}

// merge returns nv with the comments, key order and scalar styles of old
// carried over wherever the two agree in shape, so that updating one value
// of a commented section keeps the section's comments.
//
// t is the Go type nv was encoded from (nil when unknown). Where it is a
// struct, keys of old that are none of its fields are kept: they belong to
// a newer version of the section's owner, or were added by hand, and the
// update cannot have meant to remove them. Keys of a map go when fn
// deleted them.
func merge(old, nv *yaml.Node, t reflect.Type) *yaml.Node {
	if old == nil || nv == nil {
		return nv
	}
	t = deref(t)
	var out *yaml.Node
	switch {
	case old.Kind == yaml.MappingNode && nv.Kind == yaml.MappingNode:
		out = &yaml.Node{Kind: yaml.MappingNode, Tag: nv.Tag, Style: old.Style}
		fields, isStruct := structKeys(t)
		idx := map[string]int{}
		for j := 0; j+1 < len(nv.Content); j += 2 {
			if k := nv.Content[j]; k.Kind == yaml.ScalarNode {
				idx[k.Value] = j
			}
		}
		used := map[int]bool{}
		for i := 0; i+1 < len(old.Content); i += 2 {
			ok, ov := old.Content[i], old.Content[i+1]
			j, found := idx[ok.Value]
			switch {
			case ok.Kind == yaml.ScalarNode && found && !used[j]:
				used[j] = true
				var ct reflect.Type
				if isStruct {
					ct = fields[ok.Value]
				} else if t != nil && t.Kind() == reflect.Map {
					ct = t.Elem()
				}
				out.Content = append(out.Content, ok, merge(ov, nv.Content[j+1], ct))
			case isStruct && ok.Kind == yaml.ScalarNode && !hasKey(fields, ok.Value):
				out.Content = append(out.Content, ok, ov) // not the type's: keep it
			}
			// Otherwise fn removed the key (or zeroed an omitempty field):
			// it goes, with its comments.
		}
		for j := 0; j+1 < len(nv.Content); j += 2 {
			if !used[j] {
				out.Content = append(out.Content, nv.Content[j], nv.Content[j+1])
			}
		}
	case old.Kind == yaml.SequenceNode && nv.Kind == yaml.SequenceNode:
		out = &yaml.Node{Kind: yaml.SequenceNode, Tag: nv.Tag, Style: old.Style}
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for j, item := range nv.Content {
			if j < len(old.Content) {
				item = merge(old.Content[j], item, et)
			}
			out.Content = append(out.Content, item)
		}
	case old.Kind == yaml.ScalarNode && nv.Kind == yaml.ScalarNode:
		if old.ShortTag() == nv.ShortTag() && old.Value == nv.Value {
			return old
		}
		c := *nv
		if old.ShortTag() == nv.ShortTag() {
			c.Style = old.Style
			if c.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 && !strings.Contains(c.Value, "\n") {
				c.Style = 0 // a block scalar for one line reads worse than a plain one
			}
		}
		out = &c
	default:
		c := *nv
		out = &c
	}
	out.HeadComment, out.LineComment, out.FootComment = old.HeadComment, old.LineComment, old.FootComment
	return out
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func hasKey(m map[string]reflect.Type, k string) bool {
	_, ok := m[k]
	return ok
}

var (
	yamlMarshaler = reflect.TypeFor[yaml.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// structKeys returns the YAML keys of struct type t and their field types.
// ok is false when t is not a plain struct: a custom encoding, or an inline
// map that takes every other key, leaves no key unknown to the type.
func structKeys(t reflect.Type) (keys map[string]reflect.Type, ok bool) {
	if t == nil || t.Kind() != reflect.Struct || t.Implements(yamlMarshaler) || reflect.PointerTo(t).Implements(yamlMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return nil, false
	}
	fields, ok := yamlfield.Fields(t)
	if !ok {
		return nil, false
	}
	keys = make(map[string]reflect.Type, len(fields))
	for k, f := range fields {
		keys[k] = f.Type
	}
	return keys, true
}
