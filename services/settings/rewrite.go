package settings

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"

	"github.com/dsh-host/dsh-host/internal/yamledit"
	"github.com/dsh-host/dsh-host/internal/yamlfield"
	yaml "go.yaml.in/yaml/v3"
)

// rewrite returns the file's bytes with section set to val (see merge):
// yamledit splices the section's new text into the file, so every other
// byte stays as it was, or re-encodes the whole document when the file's
// shape defeats that, and checks the result either way; whole reports the
// second way.
func rewrite(f *file, section string, val *yaml.Node) (out []byte, whole bool, err error) {
	out, whole, err = yamledit.File{Data: f.data, Doc: f.doc}.Set(section, val)
	if err != nil {
		return nil, false, fmt.Errorf("%w; edit the file by hand", err)
	}
	return out, whole, nil
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
