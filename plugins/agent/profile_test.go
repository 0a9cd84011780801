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

// TestSchemaProfileConfig: a profile that is none of the three is refused,
// naming the key (schemaprofile's own tests resolve the others).
func TestSchemaProfileConfig(t *testing.T) {
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
