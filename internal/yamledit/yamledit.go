// Package yamledit changes one part of a YAML file people edit by hand:
// it splices the text of a new or changed top-level section, or of new
// items at the end of a top-level list, into the original bytes, so every
// other byte (and with it every comment) stays as it was. Every result is
// parsed again and checked to hold exactly the old values plus the change
// before it is returned. The settings file and `dsh-host import --write`
// use it.
package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// File is a YAML file's bytes and the one document they hold.
type File struct {
	Data []byte
	// Doc is Data's document node; nil when Data holds no document (it is
	// empty, or comments only).
	Doc *yaml.Node
}

// Parse parses data as one YAML document. A second document is an error:
// an edit could not say which one it meant.
func Parse(data []byte) (File, error) {
	f := File{Data: data}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		return f, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return f, fmt.Errorf("line %d: a second YAML document", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return f, err
	}
	f.Doc = &doc
	return f, nil
}

// top returns the top-level mapping, or nil when the document has none (no
// document, or a null one).
func (f File) top() *yaml.Node {
	if f.Doc == nil || len(f.Doc.Content) == 0 || f.Doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	return f.Doc.Content[0]
}

// lookup returns the key and value nodes of the top-level key name, or nils.
func (f File) lookup(name string) (key, val *yaml.Node) {
	top := f.top()
	if top == nil {
		return nil, nil
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := top.Content[i]; k.Kind == yaml.ScalarNode && k.Value == name {
			return k, top.Content[i+1]
		}
	}
	return nil, nil
}

// Set returns f's bytes with the top-level key name set to val: the lines
// from the key to its value's last line of content are replaced by the
// section encoded anew (the comments and blank lines that follow belong to
// what comes next), or the section is appended when the file has none. The
// key's own head comment stays where it is.
//
// When the file's shape defeats line splicing (a flow-style top level, a
// section sharing an anchor with another...) the whole document is
// re-encoded instead, which keeps every value and most comments; whole
// reports that.
func (f File) Set(name string, val *yaml.Node) (out []byte, whole bool, err error) {
	indent := detectIndent(f.top())
	if out, err := f.splice(name, val, indent); err == nil {
		if f.verify(name, val, out) == nil {
			return out, false, nil
		}
	}
	out, err = f.reencode(name, val, indent)
	if err != nil {
		return nil, false, err
	}
	if err := f.verify(name, val, out); err != nil {
		return nil, false, fmt.Errorf("cannot update section %q without changing others (%v)", name, err)
	}
	return out, true, nil
}

// Append returns f's bytes with items added at the end of the block list
// under the top-level key name, at the indentation of its first item. A
// missing, null or empty list is set to items as Set does. Append never
// re-encodes the whole file: a list it cannot add text to (a flow list, a
// key that is not a list) is an error naming its line, and nothing is
// changed.
func (f File) Append(name string, items []*yaml.Node) ([]byte, error) {
	if f.Doc != nil && len(f.Doc.Content) > 0 && f.top() == nil {
		return nil, fmt.Errorf("line %d: the top level is not a mapping", f.Doc.Content[0].Line)
	}
	key, list := f.lookup(name)
	var old []*yaml.Node
	if list != nil && !(list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null") {
		if list.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("line %d: %s is not a list", list.Line, name)
		}
		old = list.Content
		if len(old) > 0 && list.Style&yaml.FlowStyle != 0 {
			return nil, fmt.Errorf("line %d: %s is a flow list ([...]); write it as a block list to add to it", list.Line, name)
		}
	}
	want := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: append(append([]*yaml.Node(nil), old...), items...)}
	indent := detectIndent(f.top())
	var out []byte
	var err error
	if len(old) == 0 {
		out, err = f.splice(name, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}, indent)
	} else {
		out, err = f.insertItems(key, list, items, indent)
	}
	if err == nil {
		err = f.verify(name, want, out)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot add to %s without changing the rest of the file: %w", name, err)
	}
	return out, nil
}

// splice replaces the lines of the section name, or appends the section
// when the file has none.
func (f File) splice(name string, val *yaml.Node, indent int) ([]byte, error) {
	top := f.top()
	if top != nil && top.Style&yaml.FlowStyle != 0 {
		return nil, errors.New("flow-style top level")
	}
	key, _ := f.lookup(name)
	var k yaml.Node
	if key != nil {
		k = *key
		if key.Column != 1 {
			return nil, errors.New("section key not at the start of its line")
		}
	} else {
		k = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
	}
	// The head comment stays in the file above the key line, and trailing
	// comments stay after the section: neither is emitted again.
	k.HeadComment = ""
	k.FootComment = ""
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{&k, stripTrailingFoot(val)}}
	snippet, err := Encode(m, indent)
	if err != nil {
		return nil, err
	}
	snippet = f.lineEnds(snippet)
	data := f.Data
	if key == nil {
		if top == nil && f.Doc != nil && len(f.Doc.Content) > 0 {
			return nil, errors.New("the file holds a null document")
		}
		return join(data, len(data), snippet, len(data)), nil
	}
	start, end, err := f.extent(key)
	if err != nil {
		return nil, err
	}
	return join(data, start, snippet, end), nil
}

// insertItems adds items after the last line of the block list under key.
func (f File) insertItems(key, list *yaml.Node, items []*yaml.Node, indent int) ([]byte, error) {
	if key.Column != 1 {
		return nil, errors.New("list key not at the start of its line")
	}
	starts := LineStarts(f.Data)
	first := list.Content[0].Line - 1
	if first < 0 || first >= len(starts) {
		return nil, errors.New("list position out of range")
	}
	l := line(f.Data, starts, first)
	lead := l[:len(l)-len(bytes.TrimLeft(l, " "))]
	if !bytes.HasPrefix(l[len(lead):], []byte("-")) {
		return nil, fmt.Errorf("line %d: cannot find the list item's dash", first+1)
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
	text, err := Encode(seq, indent)
	if err != nil {
		return nil, err
	}
	// The items are encoded as a top-level list, then shifted right as a
	// whole, which keeps their structure (block scalars included).
	var b bytes.Buffer
	for _, ln := range bytes.SplitAfter(text, []byte("\n")) {
		if len(bytes.TrimSpace(ln)) > 0 {
			b.Write(lead)
		}
		b.Write(ln)
	}
	_, end, err := f.extent(key)
	if err != nil {
		return nil, err
	}
	return join(f.Data, end, f.lineEnds(b.Bytes()), end), nil
}

// extent returns the byte range of the top-level section whose key is key:
// from the start of the key's line to the end of the section's last line
// of content.
func (f File) extent(key *yaml.Node) (start, end int, err error) {
	data, top := f.Data, f.top()
	starts := LineStarts(data)
	startLine := key.Line - 1 // 0-based
	limitLine := len(starts)  // the line of the next section's key, or EOF
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i] == key && i+2 < len(top.Content) {
			limitLine = top.Content[i+2].Line - 1
		}
	}
	if startLine < 0 || startLine >= len(starts) || limitLine <= startLine {
		return 0, 0, errors.New("section position out of range")
	}
	last := startLine
	for l := startLine; l < limitLine; l++ {
		if isContent(line(data, starts, l)) {
			last = l
		}
	}
	end = len(data)
	if last+1 < len(starts) {
		end = starts[last+1]
	}
	return starts[startLine], end, nil
}

// join returns data[:start] + text + data[end:], with a line break before
// text when data[:start] does not end with one.
func join(data []byte, start int, text []byte, end int) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + len(text) + 1)
	b.Write(data[:start])
	if start > 0 && data[start-1] != '\n' {
		b.WriteByte('\n')
	}
	b.Write(text)
	b.Write(data[end:])
	return b.Bytes()
}

// lineEnds gives text the file's line endings.
func (f File) lineEnds(text []byte) []byte {
	if i := bytes.IndexByte(f.Data, '\n'); i > 0 && f.Data[i-1] == '\r' {
		return bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
	}
	return text
}

// LineStarts returns the offset of the start of every line of data.
func LineStarts(data []byte) []int {
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

// Encode renders n as YAML, nested blocks indented by indent spaces.
func Encode(n *yaml.Node, indent int) ([]byte, error) {
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

// reencode encodes the whole document with the section name set to val.
func (f File) reencode(name string, val *yaml.Node, indent int) ([]byte, error) {
	var doc yaml.Node
	if f.Doc != nil {
		doc = *f.Doc
	} else {
		doc = yaml.Node{Kind: yaml.DocumentNode}
	}
	var top *yaml.Node
	if old := f.top(); old != nil {
		t := *old
		t.Content = append([]*yaml.Node(nil), old.Content...)
		t.Style &^= yaml.FlowStyle
		top = &t
	} else {
		top = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	doc.Content = []*yaml.Node{top}
	if key, _ := f.lookup(name); key == nil {
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, val)
	} else {
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i] == key {
				top.Content[i+1] = val
			}
		}
	}
	return Encode(&doc, indent)
}

// verify checks that out parses and holds the same top-level keys as f, in
// the same order and with the same values, except name, which holds val
// (and comes last when f has no such key).
func (f File) verify(name string, val *yaml.Node, out []byte) error {
	g, err := Parse(out)
	if err != nil {
		return err
	}
	gtop := g.top()
	if gtop == nil {
		return errors.New("no sections after the update")
	}
	var want []*yaml.Node // key, value, key, value...
	if top := f.top(); top != nil {
		want = append(want, top.Content...)
	}
	if k, _ := f.lookup(name); k == nil {
		want = append(want, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, val)
	}
	if len(want) != len(gtop.Content) {
		return fmt.Errorf("%d sections became %d", len(want)/2, len(gtop.Content)/2)
	}
	for i := 0; i+1 < len(want); i += 2 {
		k, v := want[i], want[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == name {
			v = val
		}
		if err := SameValue(k, gtop.Content[i]); err != nil {
			return fmt.Errorf("key %d: %w", i/2+1, err)
		}
		if err := SameValue(v, gtop.Content[i+1]); err != nil {
			return fmt.Errorf("section %q: %w", k.Value, err)
		}
	}
	return nil
}

// SameValue reports an error unless a and b decode to equal generic values.
func SameValue(a, b *yaml.Node) error {
	var x, y any
	if err := a.Decode(&x); err != nil {
		return err
	}
	if err := b.Decode(&y); err != nil {
		return err
	}
	// NaN is equal to nothing, itself included, and as a map key it cannot
	// even be looked up: compare such values by a canonical text.
	if reflect.DeepEqual(x, y) || canonical(x) == canonical(y) {
		return nil
	}
	return errors.New("value changed")
}

func canonicalMap[K comparable](m map[K]any) string {
	entries := make([]string, 0, len(m))
	for k, e := range m {
		entries = append(entries, canonical(k)+": "+canonical(e))
	}
	slices.Sort(entries)
	return "{" + strings.Join(entries, ", ") + "}"
}

// canonical renders a decoded YAML value as text that is equal for equal
// values: map entries sorted, NaN written as such.
func canonical(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return canonicalMap(v)
	case map[any]any:
		return canonicalMap(v)
	case []any:
		items := make([]string, len(v))
		for i, e := range v {
			items[i] = canonical(e)
		}
		return "[" + strings.Join(items, ", ") + "]"
	case float64:
		return "float64:" + strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprintf("%T:%#v", v, v)
	}
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

// Minimal encodes v without the fields equal to def's (a config is
// decoded over its defaults, so they say nothing; def encodes every field,
// the empty ones included); a list of scalars is written on one line.
func Minimal(v, def any) (*yaml.Node, error) {
	var n, d yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	if err := d.Encode(def); err != nil {
		return nil, err
	}
	prune(&n, &d)
	return &n, nil
}

func prune(n, def *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var dv *yaml.Node
		if def != nil && def.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(def.Content); j += 2 {
				if def.Content[j].Value == k.Value {
					dv = def.Content[j+1]
				}
			}
		}
		if dv != nil { // else a key of a map, kept even when empty
			prune(v, dv)
			if v.Kind == yaml.MappingNode && len(v.Content) == 0 || SameValue(v, dv) == nil {
				continue
			}
		}
		if v.Kind == yaml.SequenceNode && allScalars(v.Content) {
			v.Style = yaml.FlowStyle
		}
		kept = append(kept, k, v)
	}
	n.Content = kept
}

func allScalars(nodes []*yaml.Node) bool {
	for _, n := range nodes {
		if n.Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}
