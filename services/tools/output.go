package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-host/dsh-host/internal/schemafast"
)

// resolveSchema parses and resolves a JSON Schema once, at registration.
func resolveSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// outputSchema is a tool's resolved OutputSchema, with the fast check that
// accepts the common shapes without jsonschema-go (see schemafast).
type outputSchema struct {
	resolved *jsonschema.Resolved
	fast     *schemafast.Checker // nil when the schema is beyond it
}

// validateOutput checks value against the tool's output schema. The value
// is validated in its JSON form (what a programmatic caller would
// receive), so Go structs, json.RawMessage and decoded maps are treated
// alike.
func validateOutput(s *outputSchema, tool string, value any) error {
	inst, err := jsonForm(value)
	if err != nil {
		return fmt.Errorf("%w of %q: the value is not JSON: %w", ErrInvalidOutput, tool, err)
	}
	if s.fast.Valid(inst) {
		return nil
	}
	verr := s.resolved.Validate(inst)
	if verr == nil {
		return nil
	}
	path, detail := locate(s.resolved.Schema(), inst, "value", verr)
	return fmt.Errorf("%w of %q at %s: %s", ErrInvalidOutput, tool, path, detail)
}

// jsonForm returns value as encoding/json decodes its encoding: a value
// already in that form as it is, anything else through a round trip.
func jsonForm(value any) (any, error) {
	if isJSONForm(value, 0) {
		return value, nil
	}
	var raw []byte
	switch v := value.(type) {
	case json.RawMessage:
		raw = v
	default:
		b, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, err
	}
	return inst, nil
}

// maxJSONFormDepth bounds isJSONForm's descent; a deeper value takes the
// round trip.
const maxJSONFormDepth = 64

// isJSONForm reports whether v is what decoding its own encoding would
// give: maps and slices of any (not nil: those encode as null), strings of
// valid UTF-8 (encoding replaces invalid bytes), finite float64s, bools and
// nil. Such a value, what a tool that decodes JSON returns, needs no round
// trip.
func isJSONForm(v any, depth int) bool {
	if depth > maxJSONFormDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(x)
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case map[string]any:
		if x == nil {
			return false
		}
		for k, e := range x {
			if !utf8.ValidString(k) || !isJSONForm(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isJSONForm(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// locate descends from a failing schema into the property or item that
// fails on its own, and returns the instance path of the deepest one
// (value.answer, value.items[2].id) with its validation message. It runs only
// after a failure, so resolving subschemas here costs nothing on success.
// A subschema that does not resolve on its own (a $ref into the root) stops
// the descent where it is.
func locate(s *jsonschema.Schema, inst any, path string, err error) (string, string) {
	type child struct {
		schema *jsonschema.Schema
		inst   any
		path   string
	}
	var children []child
	switch v := inst.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub := s.Properties[k]
			if sub == nil {
				sub = s.AdditionalProperties
				if sub != nil && isFalseSchema(sub) {
					return path + propertyPath(k), "not a property of the schema, which allows no other"
				}
			}
			if sub != nil {
				children = append(children, child{sub, v[k], path + propertyPath(k)})
			}
		}
	case []any:
		for i, item := range v {
			sub := s.Items
			if i < len(s.PrefixItems) {
				sub = s.PrefixItems[i]
			}
			if sub != nil {
				children = append(children, child{sub, item, path + "[" + strconv.Itoa(i) + "]"})
			}
		}
	}
	for _, c := range children {
		rs, rerr := c.schema.Resolve(nil)
		if rerr != nil {
			break
		}
		if cerr := rs.Validate(c.inst); cerr != nil {
			return locate(c.schema, c.inst, c.path, cerr)
		}
	}
	return path, leafMessage(err)
}

// propertyPath writes a key as .key when it reads as an identifier, and as
// ["key"] otherwise.
func propertyPath(k string) string {
	ident := k != ""
	for i, c := range k {
		if !(c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			ident = false
			break
		}
	}
	if ident {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

// leafMessage drops the "validating <schema>: " prefixes jsonschema-go
// stacks on its errors, keeping the failed keyword and its explanation.
func leafMessage(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	return msg
}

// isFalseSchema reports whether s is the `false` schema (jsonschema-go
// reads it as {"not": {}}).
func isFalseSchema(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero() && reflect.DeepEqual(*s, jsonschema.Schema{Not: s.Not})
}
