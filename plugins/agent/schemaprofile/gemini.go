package schemaprofile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// geminiKey reports whether k is a schema keyword Gemini takes; every
// other one is dropped.
func geminiKey(k string) bool {
	switch k {
	case "type", "format", "title", "description", "nullable",
		"enum", "items", "minItems", "maxItems",
		"properties", "required", "minProperties", "maxProperties",
		"minLength", "maxLength", "pattern", "minimum", "maximum":
		return true
	}
	return false
}

// geminiFormat reports whether Gemini takes format f for type t.
func geminiFormat(t, f string) bool {
	switch t {
	case "string":
		return f == "enum" || f == "date-time"
	case "integer":
		return f == "int32" || f == "int64"
	case "number":
		return f == "float" || f == "double"
	}
	return false
}

// GeminiSchema rewrites a JSON Schema into Gemini's subset: references
// inlined (a reference back to a schema being inlined is cut to an object
// that says so), allOf merged, anyOf and oneOf collapsed to their one
// non-null member (objects: their properties merged; others: the first,
// the rest named in the description), a null member or type made
// nullable, const made an enum, enums of other than strings named in the
// description, required kept to the listed properties, and every other
// keyword dropped.
func GeminiSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	rootMap, _ := root.(map[string]any)
	g := geminiRewriter{root: rootMap}
	s := g.node(root, nil)
	if s == nil {
		s = map[string]any{}
	}
	if s["type"] == nil {
		s["type"] = "object"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	if reflect.DeepEqual(root, s) {
		// Already in the subset: sent as registered, byte for byte.
		return raw, nil
	}
	return out, nil
}

type geminiRewriter struct {
	root map[string]any
}

// node rewrites one schema; nil for a schema that accepts nothing (false).
// stack holds the references being inlined.
func (g geminiRewriter) node(v any, stack []string) map[string]any {
	switch s := v.(type) {
	case bool:
		if !s {
			return nil
		}
		return map[string]any{}
	case map[string]any:
		return g.object(s, stack)
	}
	return map[string]any{}
}

func (g geminiRewriter) object(s map[string]any, stack []string) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		return g.ref(ref, s, stack)
	}
	out := map[string]any{}
	nullable := false
	for k, v := range s {
		switch k {
		case "type":
			t, null := oneType(v)
			nullable = nullable || null
			if t != "" {
				out["type"] = t
			}
		case "const":
			out["enum"] = []any{v}
		case "properties":
			props, _ := v.(map[string]any)
			np := map[string]any{}
			for name, p := range props {
				if r := g.node(p, stack); r != nil {
					np[name] = r
				}
			}
			out["properties"] = np
		case "items":
			if arr, ok := v.([]any); ok { // a tuple: its first member
				if len(arr) == 0 {
					continue
				}
				v = arr[0]
			}
			if r := g.node(v, stack); r != nil {
				out["items"] = r
			}
		case "prefixItems":
			if arr, ok := v.([]any); ok && len(arr) > 0 && s["items"] == nil {
				if r := g.node(arr[0], stack); r != nil {
					out["items"] = r
				}
			}
		case "nullable":
			nullable = nullable || v == true
		default:
			if geminiKey(k) {
				out[k] = v
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		subs, _ := s[k].([]any)
		if len(subs) == 0 {
			continue
		}
		var members []map[string]any
		for _, sub := range subs {
			if r := g.node(sub, stack); r != nil {
				if len(r) == 1 && r["nullable"] == true { // {"type":"null"}
					nullable = true
					continue
				}
				members = append(members, r)
			}
		}
		if k == "allOf" {
			for _, m := range members {
				merge(out, m, true)
			}
		} else {
			merge(out, collapse(members), false)
		}
	}
	if t, _ := out["type"].(string); t == "null" {
		delete(out, "type")
		nullable = true
	}
	if nullable {
		out["nullable"] = true
	}
	g.tidy(out)
	return out
}

// tidy drops what Gemini refuses in a rewritten schema: formats it does
// not know, enums of other than strings, required names not listed.
func (g geminiRewriter) tidy(out map[string]any) {
	t, _ := out["type"].(string)
	if f, ok := out["format"].(string); ok && !geminiFormat(t, f) {
		delete(out, "format")
	}
	if e, ok := out["enum"].([]any); ok {
		allStrings := true
		for _, v := range e {
			if _, ok := v.(string); !ok {
				allStrings = false
			}
		}
		if !allStrings || t != "" && t != "string" {
			delete(out, "enum")
			out["description"] = joinDescription(out["description"], "One of: "+jsonList(e)+".")
		} else if t == "" {
			out["type"] = "string"
		}
	}
	if req, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		var keep []any
		for _, r := range req {
			if name, ok := r.(string); ok && props[name] != nil && !slices.Contains(keep, r) {
				keep = append(keep, r)
			}
		}
		if len(keep) == 0 {
			delete(out, "required")
		} else {
			out["required"] = keep
		}
	}
	if out["properties"] != nil && out["type"] == nil {
		out["type"] = "object"
	}
}

// ref inlines a local reference ("#", "#/$defs/X", "#/definitions/X", or
// any JSON pointer into the root), with its siblings (a description)
// merged in.
func (g geminiRewriter) ref(ref string, s map[string]any, stack []string) map[string]any {
	name := ref[strings.LastIndex(ref, "/")+1:]
	if slices.Contains(stack, ref) {
		out := map[string]any{"type": "object", "description": fmt.Sprintf("A %s, as described above (the nesting is cut here).", name)}
		if d, ok := s["description"]; ok {
			out["description"] = d
		}
		return out
	}
	target, ok := g.pointer(ref)
	if !ok {
		// A reference out of the document: nothing to inline.
		out := map[string]any{}
		if d, ok := s["description"]; ok {
			out["description"] = d
		}
		return out
	}
	out := g.node(target, append(stack, ref))
	if out == nil {
		return nil
	}
	siblings := map[string]any{}
	for k, v := range s {
		if k != "$ref" {
			siblings[k] = v
		}
	}
	if len(siblings) > 0 {
		merge(out, g.object(siblings, stack), true)
	}
	return out
}

// pointer resolves a reference local to the document.
func (g geminiRewriter) pointer(ref string) (any, bool) {
	if ref == "#" {
		return g.root, g.root != nil
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = g.root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// oneType reads a type, which may be a list: its first non-null member,
// and whether null is one.
func oneType(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, t == "null"
	case []any:
		first, null := "", false
		for _, x := range t {
			s, _ := x.(string)
			if s == "null" {
				null = true
			} else if first == "" {
				first = s
			}
		}
		return first, null
	}
	return "", false
}

// collapse makes one schema of a union's non-null members.
func collapse(members []map[string]any) map[string]any {
	switch len(members) {
	case 0:
		return map[string]any{}
	case 1:
		return members[0]
	}
	objects := true
	for _, m := range members {
		if t, _ := m["type"].(string); t != "object" {
			objects = false
		}
	}
	if objects {
		// Any of several objects: every property is offered, none
		// required; the real schema checks the arguments.
		out := map[string]any{"type": "object"}
		for _, m := range members {
			m = maps.Clone(m)
			delete(m, "required")
			merge(out, m, false)
		}
		return out
	}
	out := maps.Clone(members[0])
	var others []string
	for _, m := range members[1:] {
		if t, _ := m["type"].(string); t != "" && t != out["type"] {
			others = append(others, t)
		}
	}
	if len(others) > 0 {
		out["description"] = joinDescription(out["description"], "Also accepts: "+strings.Join(others, ", ")+".")
	}
	return out
}

// merge adds src's keys to dst: properties united, required united when
// all is true (allOf), descriptions joined, other keys kept where dst has
// them.
func merge(dst, src map[string]any, all bool) {
	for k, v := range src {
		switch k {
		case "properties":
			dp, _ := dst["properties"].(map[string]any)
			if dp == nil {
				dp = map[string]any{}
			}
			sp, _ := v.(map[string]any)
			for name, p := range sp {
				if _, ok := dp[name]; !ok {
					dp[name] = p
				}
			}
			dst["properties"] = dp
		case "required":
			if !all {
				continue
			}
			dr, _ := dst["required"].([]any)
			sr, _ := v.([]any)
			dst["required"] = append(dr, sr...)
		case "description":
			dst["description"] = joinDescription(dst["description"], v)
		default:
			if _, ok := dst[k]; !ok {
				dst[k] = v
			}
		}
	}
}

func joinDescription(a, b any) string {
	as, _ := a.(string)
	bs, _ := b.(string)
	switch {
	case as == "" || as == bs:
		return bs
	case bs == "":
		return as
	}
	return as + " " + bs
}

func jsonList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}
