package yamlfield

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
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
