package schemaprofile

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/gemini/*.golden from the code")

// notGemini are keywords Gemini refuses; none may be left in a rewrite.
var notGemini = []string{"$ref", "$defs", "definitions", "anyOf", "oneOf", "allOf", "const", "additionalProperties", "default", "examples", "$schema"}

// TestGeminiGolden rewrites each testdata/gemini/NAME.json and compares it,
// indented, with NAME.golden (-update writes the golden files). A rewrite
// holds none of the keywords Gemini refuses, and rewriting it again
// changes nothing.
func TestGeminiGolden(t *testing.T) {
	ins, err := filepath.Glob(filepath.Join("testdata", "gemini", "*.json"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := GeminiSchema(bytes.TrimSpace(raw))
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatalf("the rewrite is not JSON: %v\n%s", err, got)
			}
			pretty.WriteByte('\n')
			golden := strings.TrimSuffix(in, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s differs from the rewrite:\n%s", golden, pretty.Bytes())
			}
			var v any
			_ = json.Unmarshal(got, &v)
			for _, k := range notGemini {
				if hasKey(v, k) {
					t.Errorf("the rewrite keeps %s: %s", k, got)
				}
			}
			again, err := GeminiSchema(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("a second rewrite changes it (%v):\n%s\n%s", err, got, again)
			}
		})
	}
}

// hasKey says whether k is a member name anywhere in v, but under
// "properties", whose members are the tool's parameter names.
func hasKey(v any, k string) bool {
	switch x := v.(type) {
	case map[string]any:
		for name, m := range x {
			if name == k {
				return true
			}
			if name == "properties" {
				if ps, ok := m.(map[string]any); ok {
					for _, p := range ps {
						if hasKey(p, k) {
							return true
						}
					}
					continue
				}
			}
			if hasKey(m, k) {
				return true
			}
		}
	case []any:
		for _, m := range x {
			if hasKey(m, k) {
				return true
			}
		}
	}
	return false
}

// TestGeminiSchemaAsRegistered: a schema already in Gemini's subset goes
// byte for byte as registered (its spacing and key order too), and an empty
// one stays empty; one that is not JSON is an error.
func TestGeminiSchemaAsRegistered(t *testing.T) {
	for _, in := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{ "type": "object",  "required": ["a"], "properties": {"a": {"type": "string"}} }`,
		``,
	} {
		got, err := GeminiSchema(json.RawMessage(in))
		if err != nil || string(got) != in {
			t.Errorf("GeminiSchema(%s) = %s, %v; want it as it is", in, got, err)
		}
	}
	if _, err := GeminiSchema(json.RawMessage(`{"type":`)); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("a schema that is not JSON: %v", err)
	}
}
