// Package yamlfield maps YAML keys to Go struct fields the way yaml.v3
// does, for code that must know a struct's keys without decoding into it:
// the host's strict config check and the settings file's merge.
package yamlfield

import (
	"reflect"
	"slices"
	"strings"
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
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
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
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f
	}
	return fields, ok
}
