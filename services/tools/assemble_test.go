package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

func schemaNames(a tools.Assembly) []string {
	var out []string
	for _, s := range a.Tools {
		out = append(out, s.Name)
	}
	return out
}

func TestAssembleOrderStable(t *testing.T) {
	names := []string{"zeta", "mcp__b__x", "Alpha", "mcp__a__y", "_under", "-dash", "mcp__a__x", "9nine"}
	want := []string{"-dash", "9nine", "Alpha", "_under", "mcp__a__x", "mcp__a__y", "mcp__b__x", "zeta"}
	// Two registries fed in opposite orders assemble identically, and
	// again after churn.
	r1, r2 := tools.New(nil), tools.New(nil)
	for i := range names {
		mustRegister(t, r1, noop(names[i]))
		mustRegister(t, r2, noop(names[len(names)-1-i]))
	}
	for _, r := range []*tools.Registry{r1, r2} {
		for range 3 {
			a, err := r.Assemble(context.Background(), testCaller)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, schemaNames(a)); diff != "" {
				t.Fatalf("order (-want +got):\n%s", diff)
			}
		}
	}
	unreg := mustRegister(t, r1, noop("mcp__a__z"))
	a, _ := r1.Assemble(context.Background(), testCaller)
	if got := schemaNames(a); !cmp.Equal(got[:7], []string{"-dash", "9nine", "Alpha", "_under", "mcp__a__x", "mcp__a__y", "mcp__a__z"}) {
		t.Errorf("after a registration: %v", got)
	}
	unreg()
	a, _ = r1.Assemble(context.Background(), testCaller)
	if diff := cmp.Diff(want, schemaNames(a)); diff != "" {
		t.Errorf("after an unregistration (-want +got):\n%s", diff)
	}
}

func TestToolsJSONByteExact(t *testing.T) {
	r := tools.New(nil)
	// Key order, spacing and escapes as a server sent them.
	odd := "{ \"type\":\"object\",\n  \"required\":[\"b\"], \"properties\":{\"b\":{\"type\":\"string\",\"description\":\"\\u00e9 <b>\"},\"a\":{}} }"
	d := noop("mcp__s__odd")
	d.Description = `Fetch <url> & "quote"`
	d.InputSchema = json.RawMessage(odd)
	mustRegister(t, r, d)
	bare := noop("bare")
	bare.Description = ""
	mustRegister(t, r, bare)

	a, err := r.Assemble(context.Background(), testCaller)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.ToolsJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"function","function":{"name":"bare","description":"","parameters":{"type":"object","properties":{}}}},` +
		`{"type":"function","function":{"name":"mcp__s__odd","description":"Fetch <url> & \"quote\"","parameters":` + odd + `}}]`
	if string(got) != want {
		t.Errorf("ToolsJSON:\n got %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Fatal("ToolsJSON is not valid JSON")
	}
	// It decodes as the OpenAI tools array.
	var decoded []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(got, &decoded); err != nil {
		t.Fatal(err)
	}
	if len(decoded) != 2 || decoded[1].Type != "function" || decoded[1].Function.Description != d.Description || string(decoded[1].Function.Parameters) != odd {
		t.Errorf("decoded: %+v", decoded)
	}
	size, err := a.Size()
	if err != nil || size != len(want) {
		t.Errorf("Size = %d, %v; want %d", size, err, len(want))
	}
}

func TestToolsJSONEdges(t *testing.T) {
	empty, err := tools.Assembly{}.ToolsJSON()
	if err != nil || string(empty) != "[]" {
		t.Errorf("empty ToolsJSON = %s, %v; want []", empty, err)
	}
	bad := tools.Assembly{Tools: []tools.Schema{{Name: "x", Parameters: json.RawMessage(`{"type":`)}}}
	if _, err := bad.ToolsJSON(); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("invalid parameters: err = %v, want an error naming the tool", err)
	}
	if _, err := bad.Size(); err == nil {
		t.Error("Size of invalid parameters: no error")
	}
}

func TestAssembleWaterfall(t *testing.T) {
	r := tools.New(nil)
	for _, n := range []string{"mcp__a__x", "mcp__a__y", "read"} {
		mustRegister(t, r, noop(n))
	}
	var order []string
	// The outer handler (registered first) sees what the inner returns.
	r.OnAssemble(testScope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		order = append(order, "outer before")
		out, err := next(ctx, a)
		order = append(order, "outer after: "+strings.Join(schemaNames(out), ","))
		out.Sections = append(out.Sections, tools.Section{Name: "outer", Text: "seen"})
		return out, err
	})
	remove := r.OnAssemble(testScope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		order = append(order, "fold")
		out, err := next(ctx, a)
		// Fold: replace every MCP tool with one meta-tool.
		kept := []tools.Schema{{Name: "mcp_call", Parameters: json.RawMessage(`{"type":"object"}`)}}
		for _, s := range out.Tools {
			if !strings.HasPrefix(s.Name, "mcp__") {
				kept = append(kept, s)
			}
		}
		out.Tools = kept
		return out, err
	})
	caller := tools.Caller{Kind: "model", ID: "s1"}
	a, err := r.Assemble(context.Background(), caller)
	if err != nil {
		t.Fatal(err)
	}
	want := tools.Assembly{
		Caller:   caller,
		Sections: []tools.Section{{Name: "outer", Text: "seen"}},
		Tools: []tools.Schema{
			{Name: "mcp_call", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "read", Description: "returns its arguments", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("assembly (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"outer before", "fold", "outer after: mcp_call,read"}, order); diff != "" {
		t.Errorf("handler order (-want +got):\n%s", diff)
	}
	remove()
	a, _ = r.Assemble(context.Background(), caller)
	if diff := cmp.Diff([]string{"mcp__a__x", "mcp__a__y", "read"}, schemaNames(a)); diff != "" {
		t.Errorf("after removing the fold (-want +got):\n%s", diff)
	}
}

func TestAssembleMaskAndFailures(t *testing.T) {
	r := tools.New(nil)
	for _, n := range []string{"mcp__a__x", "read", "write"} {
		mustRegister(t, r, noop(n))
	}
	a, err := r.Assemble(context.Background(), tools.Caller{Kind: "model", Mask: &tools.Mask{Allow: []string{"read", "mcp__*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mcp__a__x", "read"}, schemaNames(a)); diff != "" {
		t.Errorf("masked assembly (-want +got):\n%s", diff)
	}

	errBroken := errors.New("broken")
	remove := r.OnAssemble(testScope(t), func(context.Context, tools.Assembly, host.Next[tools.Assembly]) (tools.Assembly, error) {
		return tools.Assembly{}, errBroken
	})
	if _, err := r.Assemble(context.Background(), testCaller); !errors.Is(err, errBroken) {
		t.Errorf("Assemble = %v, want the handler's error", err)
	}
	remove()
	r.OnAssemble(testScope(t), func(context.Context, tools.Assembly, host.Next[tools.Assembly]) (tools.Assembly, error) {
		panic("bug")
	})
	if _, err := r.Assemble(context.Background(), testCaller); err == nil || !strings.Contains(err.Error(), "panicked: bug") {
		t.Errorf("Assemble with a panicking handler = %v, want an error", err)
	}
}

// FuzzToolsJSONStrings checks the strings ToolsJSON writes against
// encoding/json with HTML escaping off.
func FuzzToolsJSONStrings(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "<&>", "\x00\x1f\b\f\n\r\t", "é名", "\xff\xfe", "\u2028\u2029", "a\u007fb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := tools.Assembly{Tools: []tools.Schema{{Name: "t", Description: s}}}
		got, err := a.ToolsJSON()
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		wantJSON := `[{"type":"function","function":{"name":"t","description":` + strings.TrimSuffix(want.String(), "\n") + `,"parameters":{"type":"object","properties":{}}}}]`
		if string(got) != wantJSON {
			t.Fatalf("ToolsJSON with description %q:\n got %s\nwant %s", s, got, wantJSON)
		}
	})
}
