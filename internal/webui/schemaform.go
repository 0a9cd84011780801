package webui

import (
	"encoding/json"
	"slices"
	"strings"
)

// A try-it form is made from the tool's inputSchema: a field per
// property, by its type (string, number, integer, boolean, an enum, an
// array of items, a nested object), and a JSON text box for what a form
// cannot say (a $ref, oneOf, a type list, nesting past maxDepth). The
// page's script reads the fields back into the arguments object.

// maxDepth bounds the nesting a form follows: a schema is the server's,
// and a deep one must not make a page without end.
const maxDepth = 6

// field is one input of a form.
type field struct {
	Name        string
	Kind        string // object, string, number, integer, boolean, enum, array, json
	Required    bool
	Description string
	Format      string   // a string's format (uri, date-time...), shown
	Enum        []string // an enum's values, each as JSON
	Default     string   // the default: a string's text, or JSON
	Children    []*field // an object's properties
	Item        *field   // an array's items
	Multiline   bool     // a string shown as a text area
}

// schema is the part of a JSON Schema a form reads.
type schema struct {
	Type        json.RawMessage            `json:"type"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Required    []string                   `json:"required"`
	Items       json.RawMessage            `json:"items"`
	Enum        []json.RawMessage          `json:"enum"`
	Description string                     `json:"description"`
	Default     json.RawMessage            `json:"default"`
	Format      string                     `json:"format"`
	MaxLength   *int                       `json:"maxLength"`
	Ref         string                     `json:"$ref"`
	OneOf       json.RawMessage            `json:"oneOf"`
	AnyOf       json.RawMessage            `json:"anyOf"`
}

// formOf is the form of an input schema: the root object's fields.
func formOf(raw json.RawMessage) *field {
	f := fieldOf("", raw, 0)
	if f.Kind != "object" {
		// Not an object schema: the arguments as JSON.
		return &field{Kind: "object", Children: []*field{}}
	}
	return f
}

func fieldOf(name string, raw json.RawMessage, depth int) *field {
	f := &field{Name: name, Kind: "json"}
	var s schema
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return f
	}
	f.Description, f.Format = s.Description, s.Format
	if len(s.Default) > 0 {
		f.Default = string(s.Default)
	}
	var typ string
	if json.Unmarshal(s.Type, &typ) != nil {
		typ = ""
	}
	switch {
	case depth > maxDepth, s.Ref != "", len(s.OneOf) > 0, len(s.AnyOf) > 0:
		return f
	case len(s.Enum) > 0:
		f.Kind = "enum"
		for _, v := range s.Enum {
			f.Enum = append(f.Enum, string(v))
		}
	case typ == "object" || typ == "" && s.Properties != nil:
		f.Kind = "object"
		names := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			names = append(names, k)
		}
		// Required first, then by name: a stable form.
		slices.SortFunc(names, func(a, b string) int {
			ra, rb := slices.Contains(s.Required, a), slices.Contains(s.Required, b)
			if ra != rb {
				if ra {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, k := range names {
			c := fieldOf(k, s.Properties[k], depth+1)
			c.Required = slices.Contains(s.Required, k)
			f.Children = append(f.Children, c)
		}
	case typ == "array":
		f.Kind = "array"
		f.Item = fieldOf("", s.Items, depth+1)
	case typ == "string":
		f.Kind = "string"
		f.Multiline = s.MaxLength == nil || *s.MaxLength > 200
		var d string
		if json.Unmarshal(s.Default, &d) == nil {
			f.Default = d
		}
	case typ == "number", typ == "integer", typ == "boolean":
		f.Kind = typ
	}
	return f
}
