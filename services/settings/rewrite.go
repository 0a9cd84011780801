package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

var errEOF = io.EOF

// rewrite returns the file's bytes with section set to nv.
//
// It replaces only the lines of the section (from its key to its last line
// of content; the comments and blank lines that follow belong to what comes
// next) with the section encoded anew, so every other byte of the file stays
// as it was. The new value is merged into the old nodes first (merge), which
// carries the section's own comments and scalar styles over where the keys
// remain. When the file's shape defeats line splicing (a flow-style top
// level, a section sharing an anchor with another...) the whole document is
// re-encoded instead, which keeps every value and most comments. Either way
// the result is parsed again and checked to hold exactly the old sections
// and the new value before it is returned.
func rewrite(f *file, section string, nv *yaml.Node) ([]byte, error) {
	indent := detectIndent(f.top)
	key, old := f.section(section)
	val := merge(old, nv)
	if out, err := splice(f, section, key, val, indent); err == nil {
		if verify(f, section, val, out) == nil {
			return out, nil
		}
	}
	out, err := reencode(f, section, key, val, indent)
	if err != nil {
		return nil, err
	}
	if err := verify(f, section, val, out); err != nil {
		return nil, fmt.Errorf("cannot update section %q without changing others (%v); edit the file by hand", section, err)
	}
	return out, nil
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

// verify checks that out parses, holds the same sections as f in the same
// order with the same values, except section, which holds val.
func verify(f *file, section string, val *yaml.Node, out []byte) error {
	g, err := parse("", out)
	if err != nil {
		return err
	}
	if g.top == nil {
		return errors.New("no sections after the update")
	}
	want := []string{}
	if f.top != nil {
		for i := 0; i+1 < len(f.top.Content); i += 2 {
			want = append(want, f.top.Content[i].Value)
		}
	}
	if k, _ := f.section(section); k == nil {
		want = append(want, section)
	}
	var got []string
	for i := 0; i+1 < len(g.top.Content); i += 2 {
		got = append(got, g.top.Content[i].Value)
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("sections %v became %v", want, got)
	}
	for _, name := range want {
		_, nv := g.section(name)
		ov := val
		if name != section {
			_, ov = f.section(name)
		}
		var a, b any
		if err := ov.Decode(&a); err != nil {
			return err
		}
		if err := nv.Decode(&b); err != nil {
			return fmt.Errorf("section %q: %w", name, err)
		}
		if !reflect.DeepEqual(a, b) {
			return fmt.Errorf("section %q changed", name)
		}
	}
	return nil
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
func merge(old, nv *yaml.Node) *yaml.Node {
	if old == nil || nv == nil {
		return nv
	}
	var out *yaml.Node
	switch {
	case old.Kind == yaml.MappingNode && nv.Kind == yaml.MappingNode:
		out = &yaml.Node{Kind: yaml.MappingNode, Tag: nv.Tag, Style: old.Style}
		idx := map[string]int{}
		for j := 0; j+1 < len(nv.Content); j += 2 {
			if k := nv.Content[j]; k.Kind == yaml.ScalarNode {
				idx[k.Value] = j
			}
		}
		used := map[int]bool{}
		for i := 0; i+1 < len(old.Content); i += 2 {
			ok := old.Content[i]
			j, found := idx[ok.Value]
			if ok.Kind != yaml.ScalarNode || !found || used[j] {
				continue // a key fn removed goes with its comments
			}
			used[j] = true
			out.Content = append(out.Content, ok, merge(old.Content[i+1], nv.Content[j+1]))
		}
		for j := 0; j+1 < len(nv.Content); j += 2 {
			if !used[j] {
				out.Content = append(out.Content, nv.Content[j], nv.Content[j+1])
			}
		}
	case old.Kind == yaml.SequenceNode && nv.Kind == yaml.SequenceNode:
		out = &yaml.Node{Kind: yaml.SequenceNode, Tag: nv.Tag, Style: old.Style}
		for j, item := range nv.Content {
			if j < len(old.Content) {
				item = merge(old.Content[j], item)
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
