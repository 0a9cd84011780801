// Package schemafast answers "valid" for the common shape of an MCP tool's
// output schema without the cost of a general JSON Schema validator.
//
// A Checker is compiled once from a resolved schema. Valid reports true only
// when jsonschema-go's Resolved.Validate would accept the instance; false
// means "not known to be valid", and the caller then asks Validate, which
// stays the authority for every verdict and error text. Only schemas built
// of type, properties, required, additionalProperties and items (plus
// annotations such as title and description) compile; any other keyword
// makes Compile return nil.
//
// It exists because Validate, general and reflection-based, costs a tool
// call several microseconds (more with cold caches, right after the call's
// I/O) for a small object; these checks cost a few map look-ups.
package schemafast

import (
	"math"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// A Checker is a compiled schema. A nil Checker knows nothing: Valid
// returns false.
type Checker struct {
	root *node
}

// node is one compiled (sub)schema.
type node struct {
	types    typeSet
	props    map[string]*node
	required []string
	// additional applies to properties not in props: nil allows any,
	// noneAllowed refuses every one.
	additional *node
	items      *node
}

// noneAllowed is the compiled `false` schema of additionalProperties.
var noneAllowed = &node{}

type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tInteger
	tNumber
	tString
	tArray
	tObject
)

var typeNames = map[string]typeSet{
	"null": tNull, "boolean": tBoolean, "integer": tInteger, "number": tNumber,
	"string": tString, "array": tArray, "object": tObject,
}

// The $schema values jsonschema-go validates; with any other it refuses
// every instance.
var knownVersions = []string{
	"",
	"http://json-schema.org/draft-07/schema#",
	"https://json-schema.org/draft-07/schema#",
	"https://json-schema.org/draft/2020-12/schema",
}

// Compile compiles rs's schema, or returns nil when it uses anything
// beyond what a Checker knows.
func Compile(rs *jsonschema.Resolved) *Checker {
	if rs == nil {
		return nil
	}
	s := rs.Schema()
	if s == nil || !slices.Contains(knownVersions, s.Schema) {
		return nil
	}
	root := compile(s, 0)
	if root == nil {
		return nil
	}
	return &Checker{root: root}
}

// maxDepth bounds the nesting Compile follows.
const maxDepth = 32

// handled are the Schema fields compile understands: the keywords it
// checks, and annotations Validate ignores. A schema with any other field
// set does not compile, so a keyword this package does not know (including
// one a later jsonschema-go adds) can never be skipped.
var handled = map[string]bool{
	"Type": true, "Types": true, "Properties": true, "Required": true,
	"AdditionalProperties": true, "Items": true,
	"Schema": true, "Title": true, "Description": true, "Default": true, "Deprecated": true,
	"ReadOnly": true, "WriteOnly": true, "Examples": true, "Comment": true, "PropertyOrder": true,
}

func compile(s *jsonschema.Schema, depth int) *node {
	if s == nil || depth > maxDepth {
		return nil
	}
	if !onlyFields(s, handled) {
		return nil
	}
	n := &node{required: s.Required}
	if s.Type != "" && s.Types != nil {
		return nil
	}
	for _, name := range append([]string{s.Type}, s.Types...) {
		if name == "" {
			continue
		}
		ts, ok := typeNames[name]
		if !ok {
			return nil
		}
		n.types |= ts
	}
	if s.Type == "" && s.Types != nil && n.types == 0 {
		return nil // "type": [] accepts nothing
	}
	if len(s.Properties) > 0 {
		n.props = make(map[string]*node, len(s.Properties))
		for name, sub := range s.Properties {
			c := compile(sub, depth+1)
			if c == nil {
				return nil
			}
			n.props[name] = c
		}
	}
	if a := s.AdditionalProperties; a != nil {
		switch {
		case isFalse(a):
			n.additional = noneAllowed
		default:
			c := compile(a, depth+1)
			if c == nil {
				return nil
			}
			if !c.acceptsAll() {
				n.additional = c
			}
		}
	}
	if s.Items != nil {
		c := compile(s.Items, depth+1)
		if c == nil {
			return nil
		}
		n.items = c
	}
	return n
}

// onlyFields reports whether every field of s set is one of fields.
func onlyFields(s *jsonschema.Schema, fields map[string]bool) bool {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if !fields[t.Field(i).Name] && !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

// isFalse reports whether s is the `false` schema, which jsonschema-go
// reads as {"not": {}}.
func isFalse(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero() && onlyFields(s, map[string]bool{"Not": true})
}

func (n *node) acceptsAll() bool {
	return n != noneAllowed && n.types == 0 && n.props == nil && n.required == nil && n.additional == nil && n.items == nil
}

// Valid reports whether inst, a value as encoding/json decodes JSON into
// an any (map[string]any, []any, string, float64, bool, nil; or an int64,
// as services/tools decodes an integer of a call's arguments), is known to
// satisfy the schema. False means Validate must decide.
func (c *Checker) Valid(inst any) bool {
	return c != nil && c.root.valid(inst)
}

func (n *node) valid(inst any) bool {
	if n == noneAllowed {
		return false
	}
	var t typeSet
	switch v := inst.(type) {
	case nil:
		t = tNull
	case bool:
		t = tBoolean
	case string:
		t = tString
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		if _, frac := math.Modf(v); frac == 0 {
			t = tInteger
		} else {
			t = tNumber
		}
	case int64:
		t = tInteger
	case []any:
		t = tArray
	case map[string]any:
		t = tObject
	default:
		return false // another Go type: Validate decides
	}
	if n.types != 0 && n.types&t == 0 && !(t == tInteger && n.types&tNumber != 0) {
		return false
	}
	switch v := inst.(type) {
	case map[string]any:
		for _, name := range n.required {
			if _, ok := v[name]; !ok {
				return false
			}
		}
		for name, val := range v {
			sub, declared := n.props[name]
			if !declared {
				sub = n.additional
			}
			if sub != nil && !sub.valid(val) {
				return false
			}
		}
	case []any:
		if n.items != nil {
			for _, item := range v {
				if !n.items.valid(item) {
					return false
				}
			}
		}
	}
	return true
}
