// Package yamlfield maps YAML keys to Go struct fields the way yaml.v3
// does, for code that must know a struct's keys without decoding into it:
// the host's strict config check and the settings file's merge. It also
// reads the line out of a yaml.v3 error.
package yamlfield

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Fields maps the YAML keys of struct type t to its fields: the yaml tag's
// name, else the lowercased field name; "-" and unexported fields are
// skipped; ",inline" struct fields are flattened, and the Index of their
// fields is then the path from t (for reflect.Value.FieldByIndex).
//
// ok is false when t has an inline field that is not a struct (an inline
// map takes every other key, a pointer may be nil): the map then lists only
// the keys it could follow, and no key is certainly unknown to t.
func Fields(t reflect.Type) (fields map[string]reflect.StructField, ok bool) {
	fields = map[string]reflect.StructField{}
	ok = true
	for i := range t.NumField() {
		f := t.Field(i)
		key, inline, skip, _ := parseTag(f)
		if skip {
			continue
		}
		if inline {
			if f.Type.Kind() != reflect.Struct {
				ok = false
				continue
			}
			sub, subOK := Fields(f.Type)
			ok = ok && subOK
			for k, sf := range sub {
				sf.Index = append([]int{i}, sf.Index...)
				fields[k] = sf
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		fields[key] = f
	}
	return fields, ok
}

// parseTag reads f's yaml tag as yaml.v3 does: the key (the tag's name, else
// the lowercased field name), whether the field is inline, and whether yaml
// skips it (unexported and not embedded, or tagged "-"). err reports a flag
// yaml.v3 rejects.
func parseTag(f reflect.StructField) (key string, inline, skip bool, err error) {
	if !f.IsExported() && !f.Anonymous {
		return "", false, true, nil
	}
	tag := f.Tag.Get("yaml")
	if tag == "" && !strings.Contains(string(f.Tag), ":") {
		tag = string(f.Tag) // the bare tag `name,omitempty` yaml.v3 still reads
	}
	if tag == "-" {
		return "", false, true, nil
	}
	name, opts, _ := strings.Cut(tag, ",")
	if opts != "" {
		for opt := range strings.SplitSeq(opts, ",") {
			switch opt {
			case "inline":
				inline = true
			case "omitempty", "flow":
			default:
				err = fmt.Errorf("unsupported flag %q in tag %q of field %s", opt, tag, f.Name)
			}
		}
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, inline, false, err
}

// Struct is how yaml.v3 decodes a mapping into a struct type.
type Struct struct {
	// Fields maps each key to the type of its field, inline struct fields
	// (and pointers to structs) flattened.
	Fields map[string]reflect.Type
	// Keys lists the keys of Fields, sorted.
	Keys []string
	// InlineMap is the type of the ",inline" map field, or nil. It takes
	// every key that is no field, so no key is unknown to the struct.
	InlineMap reflect.Type
}

var structs sync.Map // reflect.Type → structResult

type structResult struct {
	s   *Struct
	err error
}

// StructOf returns how yaml.v3 maps keys to the fields of struct type t,
// following its rules exactly: an inline struct or pointer to a struct
// contributes its fields (but not its own inline map), an inline struct that
// unmarshals itself contributes none, an embedded struct without ",inline"
// is one key named after its type. err is what yaml.v3 would panic with: a
// duplicate key, an unsupported flag, an inline field of another kind. The
// result is cached.
func StructOf(t reflect.Type) (*Struct, error) {
	if r, ok := structs.Load(t); ok {
		r := r.(structResult)
		return r.s, r.err
	}
	s, err := structOf(t)
	if err != nil {
		err = fmt.Errorf("type %s: %w", t, err)
	}
	structs.Store(t, structResult{s, err})
	return s, err
}

func structOf(t reflect.Type) (*Struct, error) {
	s := &Struct{Fields: map[string]reflect.Type{}}
	add := func(key string, ft reflect.Type) error {
		if _, dup := s.Fields[key]; dup {
			return fmt.Errorf("duplicated key %q", key)
		}
		s.Fields[key] = ft
		s.Keys = append(s.Keys, key)
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		key, inline, skip, err := parseTag(f)
		switch {
		case err != nil:
			return nil, err
		case skip:
			continue
		case !inline:
			if err := add(key, f.Type); err != nil {
				return nil, err
			}
			continue
		}
		switch ft := f.Type; ft.Kind() {
		case reflect.Map:
			if s.InlineMap != nil {
				return nil, errors.New("multiple ,inline maps")
			}
			if ft.Key() != reflect.TypeFor[string]() { // not a named string type either
				return nil, fmt.Errorf("the ,inline map %s needs string keys", f.Name)
			}
			s.InlineMap = ft
		case reflect.Struct, reflect.Pointer:
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct {
				return nil, fmt.Errorf(",inline field %s is neither a struct nor a map", f.Name)
			}
			if reflect.PointerTo(ft).Implements(unmarshalerType) {
				continue // it is handed the whole mapping and says nothing of keys
			}
			sub, err := structOf(ft)
			if err != nil {
				return nil, err
			}
			for _, k := range sub.Keys {
				if err := add(k, sub.Fields[k]); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf(",inline field %s is neither a struct nor a map", f.Name)
		}
	}
	slices.Sort(s.Keys)
	return s, nil
}

// obsoleteUnmarshaler is the yaml.v2 form yaml.v3 still calls.
type obsoleteUnmarshaler interface {
	UnmarshalYAML(unmarshal func(any) error) error
}

var (
	unmarshalerType         = reflect.TypeFor[yamlv3.Unmarshaler]()
	obsoleteUnmarshalerType = reflect.TypeFor[obsoleteUnmarshaler]()
)

// DecodesItself reports whether yaml.v3 hands every node decoded into t (or
// into a pointer to it) to t's UnmarshalYAML, which makes its keys t's
// business. A TextUnmarshaler is not such a type: yaml.v3 calls it for
// scalars only, and decodes a mapping into its fields.
func DecodesItself(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(unmarshalerType) || pt.Implements(obsoleteUnmarshalerType)
}
