package elicit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/services/elicit"
)

// everythingSchema is the form server-everything's trigger-elicitation-request
// sends: every kind of field the spec allows.
const everythingSchema = `{"type":"object","required":["name"],"properties":{
 "name":{"title":"String","type":"string","description":"Your full, legal name"},
 "check":{"title":"Boolean","type":"boolean"},
 "firstLine":{"type":"string","default":"It was a dark and stormy night."},
 "email":{"type":"string","format":"email"},
 "birthdate":{"type":"string","format":"date"},
 "integer":{"type":"integer","minimum":1,"maximum":100,"default":42},
 "number":{"type":"number","minimum":0,"maximum":1000,"default":3.14},
 "untitled":{"type":"string","enum":["Monica","Rachel"],"default":"Monica"},
 "multi":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["Guitar","Piano","Drums"]},"default":["Guitar"]},
 "titled":{"type":"string","oneOf":[{"const":"hero-1","title":"Superman"},{"const":"hero-2","title":"Green Lantern"}],"default":"hero-1"},
 "titledMulti":{"type":"array","items":{"anyOf":[{"const":"fish-1","title":"Tuna"},{"const":"fish-2","title":"Salmon"}]},"default":["fish-1"]},
 "legacy":{"type":"string","enum":["pet-1","pet-2"],"enumNames":["Cats","Dogs"],"default":"pet-1"}}}`

func parse(t *testing.T, s string) *elicit.Form {
	t.Helper()
	f, err := elicit.ParseForm(json.RawMessage(s))
	if err != nil {
		t.Fatalf("ParseForm: %v", err)
	}
	return f
}

func TestParseForm(t *testing.T) {
	f := parse(t, everythingSchema)
	var names []string
	for _, fd := range f.Fields {
		names = append(names, fd.Name)
	}
	// Required first, then by name.
	want := []string{"name", "birthdate", "check", "email", "firstLine", "integer", "legacy", "multi", "number", "titled", "titledMulti", "untitled"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("field order (-want +got):\n%s", diff)
	}
	byName := map[string]elicit.Field{}
	for _, fd := range f.Fields {
		byName[fd.Name] = fd
	}
	if !byName["name"].Required || byName["email"].Required {
		t.Error("required flags wrong")
	}
	if diff := cmp.Diff([]elicit.Option{{"hero-1", "Superman"}, {"hero-2", "Green Lantern"}}, byName["titled"].Options); diff != "" {
		t.Errorf("titled enum options (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]elicit.Option{{"pet-1", "Cats"}, {"pet-2", "Dogs"}}, byName["legacy"].Options); diff != "" {
		t.Errorf("legacy enumNames options (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]elicit.Option{{"fish-1", "Tuna"}, {"fish-2", "Salmon"}}, byName["titledMulti"].Options); diff != "" {
		t.Errorf("titled multi-select options (-want +got):\n%s", diff)
	}
	got := f.WithDefaults(map[string]any{"name": "Ada", "integer": float64(7)})
	wantContent := map[string]any{
		"name": "Ada", "integer": float64(7), "firstLine": "It was a dark and stormy night.", "number": 3.14,
		"untitled": "Monica", "multi": []any{"Guitar"}, "titled": "hero-1", "titledMulti": []any{"fish-1"}, "legacy": "pet-1",
	}
	if diff := cmp.Diff(wantContent, got); diff != "" {
		t.Errorf("defaults applied (-want +got):\n%s", diff)
	}
	if err := f.Check(got); err != nil {
		t.Errorf("Check of an answer with defaults: %v", err)
	}
	if err := f.Check(f.WithDefaults(nil)); err == nil || !strings.Contains(err.Error(), "name is required") {
		t.Errorf("Check without the required name = %v, want it named", err)
	}
}

func TestParseFormRefuses(t *testing.T) {
	for name, s := range map[string]string{
		"nested object":         `{"properties":{"a":{"type":"object"}}}`,
		"array without enum":    `{"properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		"default outside range": `{"properties":{"a":{"type":"integer","maximum":3,"default":9}}}`,
		"not an object":         `[1]`,
	} {
		if _, err := elicit.ParseForm(json.RawMessage(s)); err == nil {
			t.Errorf("%s: ParseForm accepted %s", name, s)
		}
	}
}

func TestFieldParse(t *testing.T) {
	f := parse(t, everythingSchema)
	field := func(name string) *elicit.Field {
		for i := range f.Fields {
			if f.Fields[i].Name == name {
				return &f.Fields[i]
			}
		}
		t.Fatalf("no field %s", name)
		return nil
	}
	tests := []struct {
		field, in string
		want      any
		wantErr   string
	}{
		{"name", " Ada Lovelace ", "Ada Lovelace", ""},
		{"check", "yes", true, ""},
		{"check", "N", false, ""},
		{"check", "maybe", nil, "yes or no"},
		{"integer", "12", float64(12), ""},
		{"integer", "1.5", nil, "whole number"},
		{"integer", "101", nil, "at most 100"},
		{"number", "2.5", 2.5, ""},
		{"email", "ada@example.com", "ada@example.com", ""},
		{"email", "not an address", nil, "email"},
		{"birthdate", "1815-12-10", "1815-12-10", ""},
		{"birthdate", "10/12/1815", nil, "YYYY-MM-DD"},
		{"titled", "Green Lantern", "hero-2", ""},
		{"titled", "2", "hero-2", ""},
		{"titled", "hero-1", "hero-1", ""},
		{"titled", "Batman", nil, "not one of the choices"},
		{"legacy", "dogs", "pet-2", ""},
		{"multi", "Piano, 3", []any{"Piano", "Drums"}, ""},
		{"multi", "1,2,3", nil, "at most 2"},
		{"multi", "", nil, "at least 1"},
	}
	for _, tt := range tests {
		got, err := field(tt.field).Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s.Parse(%q) error = %v, want %q", tt.field, tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s.Parse(%q): %v", tt.field, tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s.Parse(%q) (-want +got):\n%s", tt.field, tt.in, diff)
		}
	}
}

func TestServiceRouting(t *testing.T) {
	ctx := context.Background()
	form := parse(t, `{"properties":{"color":{"type":"string","default":"blue"},"n":{"type":"integer"}}}`)
	req := elicit.Request{Server: "s", Mode: elicit.ModeForm, Message: "pick", Form: form}

	var nilService *elicit.Service
	if res := nilService.Ask(ctx, req); res.Action != elicit.Decline || res.Reason != elicit.NoAnswerer {
		t.Errorf("nil service: %+v, want a decline with NoAnswerer", res)
	}
	s := elicit.New()
	if res := s.Ask(ctx, req); res.Action != elicit.Decline || res.Reason != elicit.NoAnswerer {
		t.Errorf("no answerer: %+v, want a decline with NoAnswerer", res)
	}
	answer := func(r elicit.Result, err error) elicit.Answerer {
		return elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) { return r, err })
	}
	removeFirst := s.Install(answer(elicit.Result{Action: elicit.Accept, Content: map[string]any{"n": float64(1)}}, nil))
	removeSecond := s.Install(answer(elicit.Result{Action: elicit.Decline, Content: map[string]any{"n": float64(2)}}, nil))
	if res := s.Ask(ctx, req); res.Action != elicit.Decline || res.Content != nil {
		t.Errorf("newest answerer: %+v, want its decline, without content", res)
	}
	removeSecond()
	removeSecond()
	res := s.Ask(ctx, req)
	if diff := cmp.Diff(elicit.Result{Action: elicit.Accept, Content: map[string]any{"n": float64(1), "color": "blue"}}, res); diff != "" {
		t.Errorf("after removing the newest, the first answers with defaults applied (-want +got):\n%s", diff)
	}
	callAnswerer := answer(elicit.Result{}, errors.New("the person left"))
	if res := s.AskFor(ctx, callAnswerer, req); res.Action != elicit.Cancel || res.Reason != "the person left" {
		t.Errorf("the call's own answerer: %+v, want its error as a cancel", res)
	}
	if res := s.Ask(ctx, req); res.Action != elicit.Accept {
		t.Errorf("without the call's answerer the installed one answers: %+v", res)
	}
	removeFirst()
	if s.Answerable(nil) || !s.Answerable(callAnswerer) {
		t.Error("Answerable wrong after removing every installed answerer")
	}
	if res := s.Ask(ctx, elicit.Request{Mode: elicit.ModeForm, Form: form}); res.Action != elicit.Decline {
		t.Errorf("after removing all: %+v", res)
	}
}

func TestDefaultsAnswerer(t *testing.T) {
	ctx := context.Background()
	ok := parse(t, `{"required":["a"],"properties":{"a":{"type":"boolean","default":true},"b":{"type":"string"}}}`)
	res, _ := elicit.Defaults().Answer(ctx, elicit.Request{Mode: elicit.ModeForm, Form: ok})
	if diff := cmp.Diff(elicit.Result{Action: elicit.Accept, Content: map[string]any{"a": true}}, res); diff != "" {
		t.Errorf("defaults of a form (-want +got):\n%s", diff)
	}
	missing := parse(t, `{"required":["a"],"properties":{"a":{"type":"string"}}}`)
	res, _ = elicit.Defaults().Answer(ctx, elicit.Request{Mode: elicit.ModeForm, Form: missing})
	if res.Action != elicit.Decline || !strings.Contains(res.Reason, "a is required") {
		t.Errorf("required field without default: %+v, want a decline naming it", res)
	}
	res, _ = elicit.Defaults().Answer(ctx, elicit.Request{Mode: elicit.ModeURL, URL: "https://example.com/x"})
	if res.Action != elicit.Decline || !strings.Contains(res.Reason, "https://example.com/x") {
		t.Errorf("URL request: %+v, want a decline naming the URL", res)
	}
}
