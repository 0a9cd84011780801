package mcpfold

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestMetaToolContract(t *testing.T) {
	r := newRig(t)
	type schema struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	tests := []struct {
		name     string
		props    []string
		required []string
	}{
		{listName, []string{"query", "server", "tool", "verbose"}, nil},
		{callName, []string{"arguments", "tool"}, []string{"tool"}},
	}
	for _, tt := range tests {
		def, ok := r.reg.Get(tt.name)
		if !ok {
			t.Fatalf("%s is not registered", tt.name)
		}
		if def.Origin.Instance != "fold" || def.Description == "" {
			t.Fatalf("%s: origin %+v, description %q", tt.name, def.Origin, def.Description)
		}
		var s schema
		if err := json.Unmarshal(def.InputSchema, &s); err != nil {
			t.Fatalf("%s: schema: %v", tt.name, err)
		}
		var props []string
		for k := range s.Properties {
			props = append(props, k)
		}
		if diff := cmp.Diff(tt.props, props, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("%s properties (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.required, s.Required); diff != "" {
			t.Errorf("%s required (-want +got):\n%s", tt.name, diff)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: the schema must be a closed object", tt.name)
		}
	}
}

// TestConcurrentUse runs the fold, both meta-tools, the guard and /mcp
// toggles at once, for the race detector.
func TestConcurrentUse(t *testing.T) {
	r := newRig(t)
	r.run("") // fs=1, github=2
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				switch (w + i) % 5 {
				case 0:
					_, _ = r.reg.Assemble(context.Background(), testCaller)
				case 1:
					r.reg.Execute(context.Background(), testCaller, listName, json.RawMessage(`{"query":"file"}`))
				case 2:
					r.reg.Execute(context.Background(), testCaller, callName, json.RawMessage(`{"tool":"mcp__fs__read_file","arguments":{"path":"x"}}`))
				case 3:
					r.cmds.Run(context.Background(), testCaller, fmt.Sprintf("/mcp %s 1", []string{"disable", "enable"}[i%2]))
				case 4:
					r.reg.Execute(context.Background(), testCaller, "mcp__fs__read_file", json.RawMessage(`{"path":"x"}`))
				}
			}
		}()
	}
	wg.Wait()
	g, _ := normalize(r.store.stored(), nil)
	if diff := cmp.Diff(map[string]int{"fs": 1, "github": 2}, g.ServerIDs); diff != "" {
		t.Fatalf("ids changed under concurrent use (-want +got):\n%s", diff)
	}
}
