package schemaprofile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

func TestResolve(t *testing.T) {
	for _, c := range []struct{ profile, url, want string }{
		{Auto, "https://generativelanguage.googleapis.com/v1beta/openai", Gemini},
		{Auto, "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/endpoints/openapi", Gemini},
		{Auto, "https://api.deepseek.com", Standard},
		// A host in another case, or with the root's dot, is the same host.
		{Auto, "https://GenerativeLanguage.googleapis.com./v1beta/openai", Gemini},
		{Auto, "https://US-Central1-AIPlatform.googleapis.com/v1/x", Gemini},
		// Look-alikes are not Google's.
		{Auto, "https://generativelanguage.googleapis.com.evil.example/v1", Standard},
		{Auto, "https://evil.example/generativelanguage.googleapis.com", Standard},
		{Auto, "::not a url", Standard},
		{Standard, "https://generativelanguage.googleapis.com/v1beta/openai", Standard},
		{Gemini, "http://127.0.0.1:8080", Gemini},
	} {
		if got := Resolve(c.profile, c.url); got != c.want {
			t.Errorf("%s at %s: %s, want %s", c.profile, c.url, got, c.want)
		}
	}
}

// pickSchema is a tool schema Gemini refuses as it is: a union, a
// reference, a recursive definition, additionalProperties.
const pickSchema = `{"type":"object","properties":{"choice":{"anyOf":[{"type":"integer","minimum":1},{"type":"string","enum":["a","b"]}]},"tree":{"$ref":"#/$defs/node"}},"required":["choice"],"additionalProperties":false,"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}}}`

// TestCheck: under Gemini the real schema decides a call's arguments when
// the model was sent a rewritten one; under Standard, or for a schema the
// rewrite left as it was, nothing is checked here (the server does).
func TestCheck(t *testing.T) {
	simple := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`
	for _, c := range []struct {
		name, profile, schema, args string
		fails                       string // a part of the error, "" for none
	}{
		{"a valid call", Gemini, pickSchema, `{"choice":"b","tree":{"next":{}}}`, ""},
		{"a member of the union the rewrite dropped", Gemini, pickSchema, `{"choice":2}`, ""},
		{"a type in no member", Gemini, pickSchema, `{"choice":true}`, "choice"},
		{"a property additionalProperties refuses", Gemini, pickSchema, `{"choice":"a","other":1}`, "other"},
		{"the required one missing", Gemini, pickSchema, `{}`, "choice"},
		{"an enum's other value", Gemini, pickSchema, `{"choice":"c"}`, "choice"},
		{"arguments that are not JSON", Gemini, pickSchema, `{"choice":`, "unexpected end"},
		{"standard checks nothing", Standard, pickSchema, `{"choice":true}`, ""},
		{"a schema left as it was", Gemini, simple, `{}`, ""},
		{"no schema", Gemini, ``, `{"x":1}`, ""},
		{"a schema that does not resolve", Gemini, `{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`, `{"a":1}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := NewCache(c.profile).Check(json.RawMessage(c.schema), []byte(c.args))
			switch {
			case c.fails == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case c.fails != "" && (err == nil || !strings.Contains(err.Error(), c.fails)):
				t.Errorf("Check = %v, want an error naming %q", err, c.fails)
			}
		})
	}
}

// TestRewrite: Standard sends the tools as they are; Gemini rewrites each
// schema once however many times it is asked, and a schema that is not
// JSON fails naming its tool.
func TestRewrite(t *testing.T) {
	ts := []tools.Schema{{Name: "pick", Parameters: json.RawMessage(pickSchema)}, {Name: "none"}}
	if got, err := NewCache(Standard).Rewrite(ts); err != nil || string(got[0].Parameters) != pickSchema {
		t.Errorf("standard: %s, %v", got[0].Parameters, err)
	}
	sc := NewCache(Gemini)
	first, err := sc.Rewrite(ts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(first[0].Parameters), "$ref") || len(first[1].Parameters) != 0 {
		t.Errorf("gemini: %s / %s", first[0].Parameters, first[1].Parameters)
	}
	if string(ts[0].Parameters) != pickSchema {
		t.Errorf("the caller's tools were changed")
	}
	second, _ := sc.Rewrite(ts)
	if &first[0].Parameters[0] != &second[0].Parameters[0] {
		t.Errorf("the schema was rewritten again, not taken from the cache")
	}
	_, err = sc.Rewrite([]tools.Schema{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}})
	if err == nil || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("a schema that is not JSON: %v", err)
	}
}
