package schemafast

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func resolve(t testing.TB, raw string) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return rs
}

// instances are JSON values of every type and shape the schemas below
// care about.
var instances = []string{
	`null`, `true`, `false`, `0`, `5`, `5.5`, `-3`, `1e300`, `""`, `"x"`, `[]`, `[1,2]`, `[1,"a"]`, `[[1]]`,
	`{}`, `{"sum":5}`, `{"sum":5.5}`, `{"sum":"5"}`, `{"sum":null}`, `{"sum":5,"extra":1}`, `{"extra":1}`,
	`{"a":{"b":"x"}}`, `{"a":{"b":1}}`, `{"a":{"b":"x","c":true}}`, `{"a":[]}`, `{"items":[{"id":1},{"id":"2"}]}`,
	`{"items":[{"id":1},{"id":2}]}`, `{"items":[]}`, `{"items":{}}`, `{"n":1,"s":"x","b":true,"z":null}`,
}

// TestAgreesWithValidate holds Valid to Validate: for a schema that
// compiles, Valid is true exactly when Validate accepts; a schema using
// anything else does not compile, and Valid is then false.
func TestAgreesWithValidate(t *testing.T) {
	tests := []struct {
		schema   string
		compiles bool
	}{
		{`{}`, true},
		{`true`, true},
		{`{"type":"object","properties":{"sum":{"type":"number","description":"a plus b"}},"required":["sum"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`, true},
		{`{"type":["object","null"],"properties":{"sum":{"type":["string","number"]}}}`, true},
		{`{"type":"object","additionalProperties":{"type":"number"}}`, true},
		{`{"type":"object","additionalProperties":true,"properties":{"a":{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":false}}}`, true},
		{`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}}}}`, true},
		{`{"type":"array","items":{"type":["number","string"]}}`, true},
		{`{"type":"array","items":{"type":"integer"}}`, true},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","type":"object","properties":{"n":{"type":"number","default":1,"examples":[2]},"s":{"type":"string","readOnly":true},"b":{"type":"boolean","deprecated":true},"z":{"type":"null","$comment":"c"}}}`, true},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["n"]}`, true},
		{`{"type":"null"}`, true},
		{`{"type":"string"}`, true},
		{`{"type":"boolean"}`, true},

		// Keywords a Checker leaves to Validate.
		{`{"type":"object","properties":{"sum":{"type":"number","minimum":6}}}`, false},
		{`{"type":"string","minLength":1}`, false},
		{`{"enum":[5,"x"]}`, false},
		{`{"const":5}`, false},
		{`{"anyOf":[{"type":"string"},{"type":"number"}]}`, false},
		{`{"$defs":{"n":{"type":"number"}},"type":"object","properties":{"sum":{"$ref":"#/$defs/n"}}}`, false},
		{`{"type":"object","patternProperties":{"^s":{"type":"number"}}}`, false},
		{`{"type":"object","properties":{"sum":false}}`, false},
		{`{"type":"array","prefixItems":[{"type":"number"}]}`, false},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"number"}]}`, false},
		{`{"type":"object","additionalProperties":{"not":{},"type":"string"}}`, false},
		{`{"$schema":"https://example.com/my-schema","type":"object"}`, false},
		{`{"type":"object","x-vendor":true}`, false},
		{`{"type":"object","format":"x"}`, false},
		{`{"type":"string","pattern":"^a"}`, false},
		{`{"type":"object","unevaluatedProperties":false}`, false},
	}
	for _, tt := range tests {
		rs := resolve(t, tt.schema)
		c := Compile(rs)
		if (c != nil) != tt.compiles {
			t.Errorf("Compile(%s) = %v, want compiled %v", tt.schema, c, tt.compiles)
		}
		for _, raw := range instances {
			var inst any
			if err := json.Unmarshal([]byte(raw), &inst); err != nil {
				t.Fatal(err)
			}
			want := rs.Validate(inst) == nil
			got := c.Valid(inst)
			if tt.compiles && got != want {
				t.Errorf("schema %s, instance %s: Valid = %v, Validate accepts: %v", tt.schema, raw, got, want)
			}
			if got && !want {
				t.Errorf("schema %s, instance %s: Valid says valid, Validate refuses", tt.schema, raw)
			}
		}
	}
}

// TestOtherGoTypesAreLeftToValidate: Valid knows the types encoding/json
// decodes into (and the int64 of services/tools' arguments); anything
// else (an int, a struct, json.Number) is for Validate to judge.
func TestOtherGoTypesAreLeftToValidate(t *testing.T) {
	c := Compile(resolve(t, `{}`))
	for _, v := range []any{5, int32(5), json.Number("5"), struct{}{}, map[string]int{}, []string{}} {
		if c.Valid(v) {
			t.Errorf("Valid(%#v) = true, want false (Validate decides)", v)
		}
	}
	if !Compile(resolve(t, `{"type":"integer"}`)).Valid(int64(5)) || Compile(resolve(t, `{"type":"string"}`)).Valid(int64(5)) {
		t.Error("an int64 is an integer")
	}
	if Compile(nil) != nil || (*Checker)(nil).Valid(map[string]any{}) {
		t.Error("a nil Checker must know nothing")
	}
}

func BenchmarkValid(b *testing.B) {
	rs := resolve(b, `{"type":"object","properties":{"sum":{"type":"number","description":"a plus b"}},"required":["sum"],"additionalProperties":false}`)
	c := Compile(rs)
	var inst any
	json.Unmarshal([]byte(`{"sum":5}`), &inst)
	b.Run("schemafast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !c.Valid(inst) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("jsonschema-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := rs.Validate(inst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
