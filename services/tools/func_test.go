package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/services/tools"
)

func TestFunc(t *testing.T) {
	type args struct {
		Zone  string `json:"zone,omitempty" jsonschema:"an IANA time zone"`
		Count int    `json:"count"`
	}
	def := tools.Func("clock_now", "The time.", func(_ context.Context, in args) (any, error) {
		if in.Count < 0 {
			return nil, errors.New("count must not be negative")
		}
		return strings.Repeat(in.Zone, in.Count), nil
	})
	var schema map[string]any
	if err := json.Unmarshal(def.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type":                 "object",
		"required":             []any{"count"},
		"additionalProperties": false,
		"properties": map[string]any{
			"zone":  map[string]any{"type": "string", "description": "an IANA time zone"},
			"count": map[string]any{"type": "integer"},
		},
	}
	if diff := cmp.Diff(want, schema); diff != "" {
		t.Errorf("input schema (-want +got):\n%s", diff)
	}

	reg := tools.New(nil)
	s := testScope(t)
	if _, err := reg.Register(s, def); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args, want string
		wantErr    string
	}{
		{args: `{"zone":"UTC","count":2}`, want: "UTCUTC"},
		{args: `{"count":"two"}`, wantErr: "at arguments.count: type"},
		{args: `{"count":-1}`, wantErr: "count must not be negative"},
		// The schema the model was shown is enforced: a required property
		// is not taken as its zero value, a key is not matched in another
		// case, and nothing is accepted beyond the properties.
		{args: `{"zone":"UTC"}`, wantErr: "count"},
		{args: `{"ZONE":"UTC","count":1}`, wantErr: "ZONE"},
		{args: `{"count":1,"extra":true}`, wantErr: "extra"},
		{args: `{"count":1.5}`, wantErr: "at arguments.count: type"},
		{args: `null`, wantErr: "arguments must be a JSON object"},
	} {
		res := reg.Execute(context.Background(), tools.Caller{Kind: "test"}, "clock_now", json.RawMessage(tc.args))
		if tc.wantErr != "" {
			// The schema's problems are the registry's, before the tool
			// runs; the tool's own are tool errors.
			var te *tools.ToolError
			if !(errors.Is(res.Err, tools.ErrInvalidArguments) || errors.As(res.Err, &te)) || !strings.Contains(res.Err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want an error containing %q", tc.args, res.Err, tc.wantErr)
			}
			continue
		}
		if res.Err != nil || res.Value != tc.want || len(res.Content) != 1 || res.Content[0].Text != tc.want {
			t.Errorf("%s: result = %+v, want %q as plain text", tc.args, res, tc.want)
		}
	}
}
