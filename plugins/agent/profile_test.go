package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestGeminiSchema(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"simple schema unchanged",
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`},
		{"unsupported keywords dropped",
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"properties":{"u":{"type":"string","format":"uri","default":"x","examples":["y"]},"t":{"type":"string","format":"date-time"}}}`,
			`{"properties":{"t":{"format":"date-time","type":"string"},"u":{"type":"string"}},"type":"object"}`},
		{"refs inlined",
			`{"type":"object","properties":{"p":{"$ref":"#/$defs/point","description":"where"}},"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}}`,
			`{"properties":{"p":{"description":"where","properties":{"x":{"type":"number"}},"required":["x"],"type":"object"}},"type":"object"}`},
		{"draft-07 definitions",
			`{"type":"object","properties":{"p":{"$ref":"#/definitions/n"}},"definitions":{"n":{"type":"integer"}}}`,
			`{"properties":{"p":{"type":"integer"}},"type":"object"}`},
		{"recursion cut",
			`{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
			`{"properties":{"children":{"items":{"description":"A node, as described above (the nesting is cut here).","type":"object"},"type":"array"},"name":{"type":"string"}},"type":"object"}`},
		{"optional by anyOf null",
			`{"type":"object","properties":{"n":{"anyOf":[{"type":"integer"},{"type":"null"}],"description":"count"}}}`,
			`{"properties":{"n":{"description":"count","nullable":true,"type":"integer"}},"type":"object"}`},
		{"type list with null",
			`{"type":"object","properties":{"s":{"type":["string","null"]}}}`,
			`{"properties":{"s":{"nullable":true,"type":"string"}},"type":"object"}`},
		{"oneOf of scalars: the first, the rest described",
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"integer"},{"type":"string"}]}}}`,
			`{"properties":{"v":{"description":"Also accepts: string.","type":"integer"}},"type":"object"}`},
		{"anyOf of objects: properties merged, none required",
			`{"type":"object","properties":{"q":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"number"}},"required":["b"]}]}}}`,
			`{"properties":{"q":{"properties":{"a":{"type":"string"},"b":{"type":"number"}},"type":"object"}},"type":"object"}`},
		{"allOf merged, required united",
			`{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"boolean"}},"required":["b"]}]}`,
			`{"properties":{"a":{"type":"string"},"b":{"type":"boolean"}},"required":["a","b"],"type":"object"}`},
		{"const and enums",
			`{"type":"object","properties":{"k":{"const":"fixed"},"n":{"type":"integer","enum":[1,2]},"s":{"enum":["x","y"]}}}`,
			`{"properties":{"k":{"enum":["fixed"],"type":"string"},"n":{"description":"One of: 1, 2.","type":"integer"},"s":{"enum":["x","y"],"type":"string"}},"type":"object"}`},
		{"required kept to listed properties; false dropped",
			`{"type":"object","properties":{"a":{"type":"string"},"never":false},"required":["a","never","ghost"]}`,
			`{"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"}`},
		{"no type at the root",
			`{"properties":{"a":{"type":"string"}}}`,
			`{"properties":{"a":{"type":"string"}},"type":"object"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := geminiSchema(json.RawMessage(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestSchemaProfileConfig(t *testing.T) {
	for _, c := range []struct{ profile, url, want string }{
		{"auto", "https://generativelanguage.googleapis.com/v1beta/openai", profileGemini},
		{"auto", "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/endpoints/openapi", profileGemini},
		{"auto", "https://api.deepseek.com", profileStandard},
		// A host in another case, or with the root's dot, is the same host.
		{"auto", "https://GenerativeLanguage.googleapis.com./v1beta/openai", profileGemini},
		{"auto", "https://US-Central1-AIPlatform.googleapis.com/v1/x", profileGemini},
		{"auto", "https://generativelanguage.googleapis.com.evil.example/v1", profileStandard},
		{"standard", "https://generativelanguage.googleapis.com/v1beta/openai", profileStandard},
		{"gemini", "http://127.0.0.1:8080", profileGemini},
	} {
		cfg := defaults()
		cfg.SchemaProfile, cfg.BaseURL = c.profile, c.url
		if err := validate(&cfg); err != nil {
			t.Fatal(err)
		}
		if got := resolveProfile(cfg); got != c.want {
			t.Errorf("%s at %s: %s, want %s", c.profile, c.url, got, c.want)
		}
	}
	cfg := defaults()
	cfg.SchemaProfile = "vertex"
	if err := validate(&cfg); err == nil || !strings.Contains(err.Error(), "schemaProfile") {
		t.Errorf("a wrong profile: %v", err)
	}
}

// pickSchema is a tool schema Gemini refuses as it is: a union, a
// reference, a recursive definition, additionalProperties.
const pickSchema = `{"type":"object","properties":{"choice":{"anyOf":[{"type":"integer","minimum":1},{"type":"string","enum":["a","b"]}]},"tree":{"$ref":"#/$defs/node"}},"required":["choice"],"additionalProperties":false,"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}}}`

// Under the gemini profile the model gets the rewritten schema, and a call
// whose arguments the real schema refuses is not made: the model reads why.
func TestGeminiProfileValidatesRealSchema(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{
			call("call_bad", "pick", `{"choice":true}`),
			call("call_extra", "pick", `{"choice":"a","other":1}`),
			call("call_ok", "pick", `{"choice":"b","tree":{"next":{}}}`),
		}},
		openaitest.Turn{Content: "done"},
	)
	e := start(t, srv, "      schemaProfile: gemini\n")
	var calls atomic.Int32
	s := host.NewScope(context.Background(), "pick", nil)
	t.Cleanup(func() { s.Dispose(time.Second) })
	if _, err := e.reg.Register(s, tools.Definition{
		Name: "pick", Description: "Pick one.", InputSchema: json.RawMessage(pickSchema),
		Execute: func(_ context.Context, c tools.Call) (tools.Output, error) {
			calls.Add(1)
			return tools.Output{Value: "picked " + string(c.Args)}, nil
		},
	}); err != nil {
		t.Fatal(err)
	}
	var o output
	if _, err := e.agent.Main().Turn(context.Background(), "pick", o.out()); err != nil {
		t.Fatalf("turn: %v\n%s", err, o.status.String())
	}
	toolsJSON := string(srv.Requests()[0].Field("tools"))
	for _, k := range []string{"$ref", "$defs", "anyOf", "additionalProperties"} {
		if strings.Contains(toolsJSON, k) {
			t.Errorf("the tools sent under gemini hold %s: %s", k, toolsJSON)
		}
	}
	if !strings.Contains(toolsJSON, `"name":"pick"`) {
		t.Fatalf("pick was not sent: %s", toolsJSON)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want once (only call_ok)", n)
	}
	got := map[string]string{}
	for _, m := range messages(t, srv, 1) {
		if m.Role == "tool" {
			got[m.ToolCallID] = m.Text()
		}
	}
	for _, id := range []string{"call_bad", "call_extra"} {
		if !strings.Contains(got[id], "do not match the tool's parameter schema") {
			t.Errorf("%s: %q, want a schema error", id, got[id])
		}
	}
	if !strings.Contains(got["call_ok"], "picked") {
		t.Errorf("call_ok: %q", got["call_ok"])
	}
}

// Under the standard profile the schema goes as registered and nothing is
// checked on the agent's side.
func TestStandardProfileSendsSchemaAsIs(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "ok"})
	e := start(t, srv, "")
	s := host.NewScope(context.Background(), "pick", nil)
	t.Cleanup(func() { s.Dispose(time.Second) })
	if _, err := e.reg.Register(s, tools.Definition{
		Name: "pick", Description: "Pick one.", InputSchema: json.RawMessage(pickSchema),
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "x"}, nil },
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.agent.Main().Turn(context.Background(), "hi", Output{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(srv.Requests()[0].Field("tools")), pickSchema) {
		t.Errorf("the schema was not sent byte for byte: %s", srv.Requests()[0].Field("tools"))
	}
}

// TestGeminiProfileHeldToolNotChecked: the gemini profile's own schema
// check is for the tools the model was offered; a call to a tool hidden
// from it (a definition the policy holds) goes to the registry, whose
// guards refuse it, so that the model does not read the held schema's
// text in a schema error.
func TestGeminiProfileHeldToolNotChecked(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{call("call_held", "held", `{}`)}},
		openaitest.Turn{Content: "done"},
	)
	e := start(t, srv, "      schemaProfile: gemini\n")
	s := host.NewScope(context.Background(), "held", nil)
	t.Cleanup(func() { s.Dispose(time.Second) })
	if _, err := e.reg.Register(s, tools.Definition{
		Name: "held", Description: "Held.", InputSchema: json.RawMessage(`{"type":"object","properties":{"SEND_THE_PASSWORD":{"type":"string"}},"required":["SEND_THE_PASSWORD"],"additionalProperties":false}`),
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "ran"}, nil },
	}); err != nil {
		t.Fatal(err)
	}
	e.reg.OnHide(s, func(_ tools.Caller, d *tools.Definition) bool { return d.Name == "held" })
	e.reg.OnGuard(s, "held", func(context.Context, tools.Call) error { return errors.New("held until trusted") })
	var o output
	if _, err := e.agent.Main().Turn(context.Background(), "go", o.out()); err != nil {
		t.Fatalf("turn: %v\n%s", err, o.status.String())
	}
	for _, m := range messages(t, srv, 1) {
		if m.Role == "tool" && (strings.Contains(m.Text(), "SEND_THE_PASSWORD") || !strings.Contains(m.Text(), "held until trusted")) {
			t.Errorf("the model read %q, want the guard's refusal only", m.Text())
		}
	}
}
