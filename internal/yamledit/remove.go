package yamledit

import (
	"bytes"
	"errors"
	"fmt"

	yaml "go.yaml.in/yaml/v3"
)

// RemoveItem returns f's bytes without item i of the block list under the
// top-level key name: the item's lines, and the comment lines right above
// it at its dash's indentation (its own comment), go; every other byte
// stays. The result is checked to hold the list without that item and
// every other section unchanged. A flow list, or an item that shares a
// line with another, is an error naming its line, and nothing is changed.
func (f File) RemoveItem(name string, i int) ([]byte, error) {
	key, list := f.lookup(name)
	if key == nil || list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("no %s list", name)
	}
	if i < 0 || i >= len(list.Content) {
		return nil, fmt.Errorf("%s has no item %d", name, i)
	}
	if len(list.Content) == 1 {
		// An empty list is written as one: there is no line to keep.
		out, _, err := f.Set(name, &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle})
		return out, err
	}
	if list.Style&yaml.FlowStyle != 0 {
		return nil, fmt.Errorf("line %d: %s is a flow list ([...]); write it as a block list to remove from it", list.Line, name)
	}
	data := f.Data
	starts := LineStarts(data)
	item := list.Content[i]
	first := item.Line - 1 // 0-based line of the item's dash
	if first < 0 || first >= len(starts) {
		return nil, errors.New("item position out of range")
	}
	l := line(data, starts, first)
	lead := l[:len(l)-len(bytes.TrimLeft(l, " "))]
	if !bytes.HasPrefix(l[len(lead):], []byte("-")) {
		return nil, fmt.Errorf("line %d: cannot find the list item's dash", first+1)
	}
	// The item ends at the last line of content before the next item
	// (or the end of the section).
	limit := len(starts)
	if i+1 < len(list.Content) {
		limit = list.Content[i+1].Line - 1
	} else if _, end, err := f.extent(key); err == nil && end > 0 {
		limit = len(LineStarts(data[:end]))
	}
	last := first
	for n := first; n < limit; n++ {
		if isContent(line(data, starts, n)) {
			last = n
		}
	}
	// Its own comment: the comment lines just above, at the dash's column.
	for first > 0 {
		above := line(data, starts, first-1)
		t := bytes.TrimLeft(above, " ")
		if len(above)-len(t) != len(lead) || len(t) == 0 || t[0] != '#' {
			break
		}
		first--
	}
	end := len(data)
	if last+1 < len(starts) {
		end = starts[last+1]
	}
	out := append(append([]byte(nil), data[:starts[first]]...), data[end:]...)
	want := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: append(append([]*yaml.Node(nil), list.Content[:i]...), list.Content[i+1:]...)}
	if err := f.verify(name, want, out); err != nil {
		return nil, fmt.Errorf("cannot remove item %d of %s without changing the rest of the file: %w", i, name, err)
	}
	return out, nil
}
