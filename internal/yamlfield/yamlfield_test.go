package yamlfield

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
)

type inner struct {
	Deep string `yaml:"deep"`
}

type sample struct {
	Named   string `yaml:"named,omitempty"`
	Plain   int
	Skipped string `yaml:"-"`
	hidden  string // an unexported field has no key
	Inner   inner  `yaml:",inline"`
}

type withMap struct {
	Known string         `yaml:"known"`
	Rest  map[string]any `yaml:",inline"`
}

func TestFields(t *testing.T) {
	fields, ok := Fields(reflect.TypeFor[sample]())
	if !ok {
		t.Fatal("ok = false for a struct whose only inline field is a struct")
	}
	got := map[string][]int{}
	for k, f := range fields {
		got[k] = f.Index
	}
	want := map[string][]int{"named": {0}, "plain": {1}, "deep": {4, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys and indexes (-want +got):\n%s", diff)
	}
	v := reflect.ValueOf(sample{Inner: inner{Deep: "x"}})
	if s := v.FieldByIndex(fields["deep"].Index).String(); s != "x" {
		t.Errorf("FieldByIndex(deep) = %q, want x", s)
	}

	fields, ok = Fields(reflect.TypeFor[withMap]())
	if ok || len(fields) != 1 || fields["known"].Name != "Known" {
		t.Errorf("Fields(withMap) = %v, %v; want only known, and ok false", fields, ok)
	}
}

// selfDecoding unmarshals itself; inlined, it adds no key.
type selfDecoding struct{ Secret string }

func (s *selfDecoding) UnmarshalYAML(n *yamlv3.Node) error { return n.Decode(&s.Secret) }

type obsolete struct{ V string }

func (o *obsolete) UnmarshalYAML(f func(any) error) error { return f(&o.V) }

type text struct{ V string }

func (x *text) UnmarshalText(b []byte) error { x.V = string(b); return nil }

// Base is embedded without ",inline": yaml.v3 reads it as the key "base".
type Base struct{ ID string }

type nestedMap struct {
	A    string            `yaml:"a"`
	More map[string]string `yaml:",inline"`
}

type forms struct {
	Base
	Ptr     *inner        `yaml:",inline"`
	Nested  nestedMap     `yaml:",inline"`
	Self    selfDecoding  `yaml:",inline"`
	Wait    time.Duration `yaml:"wait"`
	Skipped int           `yaml:"-"`
}

type twoMaps struct {
	A map[string]int `yaml:",inline"`
	B map[string]int `yaml:",inline"`
}

type dupKey struct {
	A string `yaml:"x"`
	B string `yaml:"x"`
}

type badFlag struct {
	A string `yaml:"a,omitnil"`
}

type badInline struct {
	A []string `yaml:",inline"`
}

type keyName string

// namedKeyMap's inline map has string keys of a named type, which yaml.v3
// refuses: it wants exactly string.
type namedKeyMap struct {
	M map[keyName]any `yaml:",inline"`
}

func TestStructOf(t *testing.T) {
	str, dur := reflect.TypeFor[string](), reflect.TypeFor[time.Duration]()
	tests := []struct {
		typ     reflect.Type
		fields  map[string]reflect.Type
		inline  reflect.Type
		wantErr string
	}{
		{typ: reflect.TypeFor[sample](), fields: map[string]reflect.Type{"named": str, "plain": reflect.TypeFor[int](), "deep": str}},
		{typ: reflect.TypeFor[withMap](), fields: map[string]reflect.Type{"known": str}, inline: reflect.TypeFor[map[string]any]()},
		// An inline struct brings its fields but not its own inline map.
		{typ: reflect.TypeFor[forms](), fields: map[string]reflect.Type{"base": reflect.TypeFor[Base](), "deep": str, "a": str, "wait": dur}},
		// The bare tag yaml.v3 still reads (which go vet refuses in source).
		{typ: reflect.StructOf([]reflect.StructField{{Name: "Legacy", Type: str, Tag: "name,omitempty"}}), fields: map[string]reflect.Type{"name": str}},
		{typ: reflect.TypeFor[twoMaps](), wantErr: "multiple ,inline maps"},
		{typ: reflect.TypeFor[dupKey](), wantErr: `duplicated key "x"`},
		{typ: reflect.TypeFor[badFlag](), wantErr: `unsupported flag "omitnil"`},
		{typ: reflect.TypeFor[badInline](), wantErr: "neither a struct nor a map"},
		{typ: reflect.TypeFor[namedKeyMap](), wantErr: "needs string keys"},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			s, err := StructOf(tt.typ)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("StructOf = %v; want an error with %q", err, tt.wantErr)
				}
				// yaml.v3 refuses the type too (by panicking).
				if !panics(func() { _ = yamlv3.Unmarshal([]byte("x: 1"), reflect.New(tt.typ).Interface()) }) {
					t.Error("yaml.v3 decodes a type StructOf refuses")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.fields, s.Fields, cmp.Comparer(func(a, b reflect.Type) bool { return a == b })); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if s.InlineMap != tt.inline {
				t.Errorf("InlineMap = %v, want %v", s.InlineMap, tt.inline)
			}
			// yaml.v3 with KnownFields agrees: every key is known, and
			// another one is unknown unless an inline map takes it.
			var doc bytes.Buffer
			for _, k := range s.Keys {
				fmt.Fprintf(&doc, "%s: null\n", k)
			}
			dec := yamlv3.NewDecoder(strings.NewReader(doc.String() + "zzz: null\n"))
			dec.KnownFields(true)
			err = dec.Decode(reflect.New(tt.typ).Interface())
			if want := tt.inline == nil; (err != nil) != want || err != nil && !strings.Contains(err.Error(), "field zzz not found") {
				t.Errorf("yaml.v3 KnownFields over %q = %v; want an error only for zzz: %v", doc.String(), err, want)
			}
		})
	}
}

func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

func TestDecodesItself(t *testing.T) {
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[selfDecoding]():   true,
		reflect.TypeFor[*selfDecoding]():  true,
		reflect.TypeFor[**selfDecoding](): true,
		reflect.TypeFor[obsolete]():       true,
		reflect.TypeFor[text]():           false,
		reflect.TypeFor[inner]():          false,
		reflect.TypeFor[time.Duration]():  false,
	} {
		if got := DecodesItself(typ); got != want {
			t.Errorf("DecodesItself(%v) = %v, want %v", typ, got, want)
		}
	}
}

func TestErrorLine(t *testing.T) {
	decodeErr := func(doc string, v any) error { return yamlv3.Unmarshal([]byte(doc), v) }
	var port struct{ Port, Size int }
	tests := []struct {
		name     string
		err      error
		line     int
		msg      string
		problems []Problem
	}{
		{
			name: "parse error",
			err:  decodeErr("x: 1\n\ty: 2\n", new(any)),
			line: 2, msg: "found a tab character that violates indentation",
		},
		{
			name: "parse error without a line",
			err:  errors.New("yaml: control characters are not allowed"),
			msg:  "control characters are not allowed",
		},
		{
			name: "one type error",
			err:  decodeErr("\nport: high\n", &port),
			line: 2, msg: "cannot unmarshal !!str `high` into int",
		},
		{
			name: "two type errors",
			err:  decodeErr("port: high\nsize: big\n", &port),
			line: 1, msg: "cannot unmarshal !!str `high` into int; line 2: cannot unmarshal !!str `big` into int",
			problems: []Problem{{1, "cannot unmarshal !!str `high` into int"}, {2, "cannot unmarshal !!str `big` into int"}},
		},
		{
			name: "type errors wrapped",
			err:  fmt.Errorf("decode: %w", decodeErr("size: big\n", &port)),
			line: 1, msg: "cannot unmarshal !!str `big` into int",
		},
		{
			name: "type errors as text",
			err:  errors.New("yaml: unmarshal errors:\n  line 3: first\n  line 5: second"),
			line: 3, msg: "first; line 5: second",
		},
		{
			name: "another error",
			err:  errors.New("level: bad value"),
			msg:  "level: bad value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, msg := ErrorLine(tt.err)
			if line != tt.line || msg != tt.msg {
				t.Errorf("ErrorLine(%q) = %d, %q; want %d, %q", tt.err, line, msg, tt.line, tt.msg)
			}
			if tt.problems != nil {
				if diff := cmp.Diff(tt.problems, Problems(tt.err)); diff != "" {
					t.Errorf("Problems (-want +got):\n%s", diff)
				}
			}
		})
	}
	if line, msg := ErrorLine(nil); line != 0 || msg != "" {
		t.Errorf("ErrorLine(nil) = %d, %q", line, msg)
	}
}
