package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dsh-host/dsh-host/services/tools"
)

// recorder collects pipeline events from hooks and tools.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func recordingTool(rec *recorder, name string) tools.Definition {
	return tools.Definition{
		Name: name,
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			rec.add("tool " + call.Name + " " + string(call.Args))
			return tools.Output{Value: "ok"}, nil
		},
	}
}

func TestPipelineOrder(t *testing.T) {
	r := tools.New(nil)
	rec := &recorder{}
	mustRegister(t, r, recordingTool(rec, "t"))
	// Registered interleaved: each kind runs in its own registration order,
	// kinds in pipeline order.
	r.OnPostExecute(testScope(t), "*", func(_ context.Context, _ tools.Call, _ *tools.Result) error { rec.add("post1"); return nil })
	r.OnGuard(testScope(t), "*", func(context.Context, tools.Call) error { rec.add("guard1"); return nil })
	r.OnPreExecute(testScope(t), "*", func(context.Context, *tools.Call) error { rec.add("pre1"); return nil })
	r.OnPostExecute(testScope(t), "t", func(_ context.Context, _ tools.Call, _ *tools.Result) error { rec.add("post2"); return nil })
	r.OnPreExecute(testScope(t), "t", func(context.Context, *tools.Call) error { rec.add("pre2"); return nil })
	r.OnGuard(testScope(t), "t*", func(context.Context, tools.Call) error { rec.add("guard2"); return nil })

	res := r.Execute(context.Background(), testCaller, "t", nil)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []string{"pre1", "pre2", "guard1", "guard2", "tool t {}", "post1", "post2"}
	if diff := cmp.Diff(want, rec.take()); diff != "" {
		t.Errorf("pipeline order (-want +got):\n%s", diff)
	}
}

func TestHookPatterns(t *testing.T) {
	r := tools.New(nil)
	rec := &recorder{}
	patterns := []string{"*", "mcp__*", "mcp__github__*", "mcp__github__search", "*__search", "mcp__*__search*", "mcp__", "MCP__*", "github"}
	for _, p := range patterns {
		r.OnGuard(testScope(t), p, func(context.Context, tools.Call) error { rec.add(p); return nil })
	}
	tests := []struct {
		tool string
		want []string
	}{
		{"mcp__github__search", []string{"*", "mcp__*", "mcp__github__*", "mcp__github__search", "*__search", "mcp__*__search*"}},
		{"mcp__github__search_code", []string{"*", "mcp__*", "mcp__github__*", "mcp__*__search*"}},
		{"mcp__web__fetch", []string{"*", "mcp__*"}},
		{"mcp__githubx__push", []string{"*", "mcp__*"}},
		{"x_mcp__github__push", []string{"*"}},
		{"github", []string{"*", "github"}},
		{"read", []string{"*"}},
	}
	for _, tt := range tests {
		mustRegister(t, r, recordingTool(rec, tt.tool))
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			if res := r.Execute(context.Background(), testCaller, tt.tool, nil); res.Err != nil {
				t.Fatal(res.Err)
			}
			want := append(tt.want, "tool "+tt.tool+" {}")
			if diff := cmp.Diff(want, rec.take()); diff != "" {
				t.Errorf("hooks that ran (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHookRemove(t *testing.T) {
	r := tools.New(nil)
	rec := &recorder{}
	mustRegister(t, r, recordingTool(rec, "t"))
	remove := r.OnPreExecute(testScope(t), "*", func(context.Context, *tools.Call) error { rec.add("pre"); return nil })
	r.Execute(context.Background(), testCaller, "t", nil)
	remove()
	remove()
	r.Execute(context.Background(), testCaller, "t", nil)
	want := []string{"pre", "tool t {}", "tool t {}"}
	if diff := cmp.Diff(want, rec.take()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		pre  []func(*tools.Call)
		want string
	}{
		{"nil becomes {}", "", nil, `{}`},
		{"blank becomes {}", " \n", nil, `{}`},
		{"passed through", `{"a":1}`, nil, `{"a":1}`},
		{"rewritten", `{"a":1}`, []func(*tools.Call){func(c *tools.Call) { c.Args = json.RawMessage(`{"a":2}`) }}, `{"a":2}`},
		{"rewrites chain", `{"a":1}`, []func(*tools.Call){
			func(c *tools.Call) { c.Args = json.RawMessage(`{"a":2}`) },
			func(c *tools.Call) { c.Args = json.RawMessage(strings.Replace(string(c.Args), "2", "3", 1)) },
		}, `{"a":3}`},
		{"rewritten to nil becomes {}", `{"a":1}`, []func(*tools.Call){func(c *tools.Call) { c.Args = nil }}, `{}`},
		{"name and caller are not rewritable", `{}`, []func(*tools.Call){func(c *tools.Call) {
			c.Name = "other"
			c.Caller.Kind = "forged"
		}}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tools.New(nil)
			var got tools.Call
			mustRegister(t, r, tools.Definition{Name: "t", Execute: func(_ context.Context, c tools.Call) (tools.Output, error) {
				got = c
				return tools.Output{}, nil
			}})
			mustRegister(t, r, noop("other"))
			for _, fn := range tt.pre {
				r.OnPreExecute(testScope(t), "t", func(_ context.Context, c *tools.Call) error { fn(c); return nil })
			}
			caller := tools.Caller{Kind: "gateway", ID: "s1", ImageInput: true}
			if res := r.Execute(context.Background(), caller, "t", json.RawMessage(tt.args)); res.Err != nil {
				t.Fatal(res.Err)
			}
			want := tools.Call{Caller: caller, Name: "t", Args: json.RawMessage(tt.want)}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(tools.Call{})); diff != "" {
				t.Errorf("the tool's call (-want +got):\n%s", diff)
			}
		})
	}
}

var errNeedsApproval = errors.New("needs approval")

func TestRefusals(t *testing.T) {
	tests := []struct {
		name      string
		install   func(r *tools.Registry)
		stage     tools.Stage
		toolRuns  bool
		wantInMsg string
	}{
		{"pre-execute refuses", func(r *tools.Registry) {
			r.OnPreExecute(testScope(t), "mcp__*", func(context.Context, *tools.Call) error { return errNeedsApproval })
		}, tools.StagePreExecute, false, `call to "mcp__github__push" refused by a pre-execute hook: needs approval`},
		{"guard denies", func(r *tools.Registry) {
			r.OnGuard(testScope(t), "mcp__github__*", func(context.Context, tools.Call) error { return nil })
			r.OnGuard(testScope(t), "mcp__github__*", func(context.Context, tools.Call) error { return errNeedsApproval })
			r.OnGuard(testScope(t), "*", func(context.Context, tools.Call) error { panic("a guard after a denial ran") })
		}, tools.StageGuard, false, `call to "mcp__github__push" denied by a guard: needs approval`},
		{"post-execute blocks", func(r *tools.Registry) {
			r.OnPostExecute(testScope(t), "*", func(context.Context, tools.Call, *tools.Result) error { return errNeedsApproval })
		}, tools.StagePostExecute, true, `result of "mcp__github__push" blocked by a post-execute hook: needs approval`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tools.New(nil)
			ran := false
			mustRegister(t, r, tools.Definition{Name: "mcp__github__push", Execute: func(context.Context, tools.Call) (tools.Output, error) {
				ran = true
				return tools.Output{Value: 1}, nil
			}})
			tt.install(r)
			res := r.Execute(context.Background(), testCaller, "mcp__github__push", nil)
			if !errors.Is(res.Err, tools.ErrRefused) || !errors.Is(res.Err, errNeedsApproval) {
				t.Fatalf("Err = %v, want a refusal with the hook's reason", res.Err)
			}
			var re *tools.RefusalError
			if !errors.As(res.Err, &re) || re.Stage != tt.stage || re.Tool != "mcp__github__push" {
				t.Fatalf("Err = %#v, want a *RefusalError at %s", res.Err, tt.stage)
			}
			var te *tools.ToolError
			if errors.As(res.Err, &te) {
				t.Error("a refusal passes for a tool error")
			}
			if ran != tt.toolRuns {
				t.Errorf("tool ran = %v, want %v", ran, tt.toolRuns)
			}
			want := tools.Result{Content: []tools.Content{tools.Text("Error: " + tt.wantInMsg)}, Err: res.Err}
			if diff := cmp.Diff(want, res, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

type quotaError struct{ left int }

func (e *quotaError) Error() string { return "quota exhausted" }

func TestToolErrorsAndUnknown(t *testing.T) {
	r := tools.New(nil)
	mustRegister(t, r, tools.Definition{Name: "fails", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		return tools.Output{Value: "partial"}, &quotaError{left: 0}
	}})
	mustRegister(t, r, tools.Definition{Name: "panics", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		panic("index out of range")
	}})
	mustRegister(t, r, noop("mcp__github__push"))

	res := r.Execute(context.Background(), testCaller, "fails", nil)
	var qe *quotaError
	var te *tools.ToolError
	if !errors.As(res.Err, &qe) || !errors.As(res.Err, &te) || te.Tool != "fails" {
		t.Fatalf("Err = %#v, want a *ToolError reaching the tool's *quotaError", res.Err)
	}
	if errors.Is(res.Err, tools.ErrRefused) {
		t.Error("a tool error passes for a refusal")
	}
	if diff := cmp.Diff(tools.Result{Content: []tools.Content{tools.Text("Error: quota exhausted")}}, res, cmpIgnoreErr); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	res = r.Execute(context.Background(), testCaller, "panics", nil)
	if !errors.As(res.Err, &te) || !strings.Contains(res.Err.Error(), `tool "panics" panicked: index out of range`) {
		t.Errorf("panicking tool: Err = %v", res.Err)
	}

	unknown := r.Execute(context.Background(), testCaller, "nope", nil)
	if !errors.Is(unknown.Err, tools.ErrUnknownTool) || errors.Is(unknown.Err, tools.ErrRefused) {
		t.Errorf("unknown tool: Err = %v, want ErrUnknownTool and not a refusal", unknown.Err)
	}
	if diff := cmp.Diff([]tools.Content{tools.Text(`Error: unknown tool "nope"`)}, unknown.Content); diff != "" {
		t.Errorf("unknown tool content (-want +got):\n%s", diff)
	}

	// A tool hidden by the mask reads exactly like one that does not exist,
	// and is still a refusal to code that asks.
	masked := tools.Caller{Kind: "model", Mask: &tools.Mask{Deny: []string{"mcp__github__*"}}}
	hidden := r.Execute(context.Background(), masked, "mcp__github__push", nil)
	if !errors.Is(hidden.Err, tools.ErrUnknownTool) || !errors.Is(hidden.Err, tools.ErrRefused) {
		t.Errorf("masked tool: Err = %v, want ErrUnknownTool and ErrRefused", hidden.Err)
	}
	if diff := cmp.Diff([]tools.Content{tools.Text(`Error: unknown tool "mcp__github__push"`)}, hidden.Content); diff != "" {
		t.Errorf("masked tool content (-want +got):\n%s", diff)
	}
	var re *tools.RefusalError
	if !errors.As(hidden.Err, &re) || re.Stage != tools.StageMask {
		t.Errorf("masked tool: Err = %#v, want a refusal at the mask", hidden.Err)
	}
}

var cmpIgnoreErr = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())

func TestHookPanics(t *testing.T) {
	for _, stage := range []string{"pre", "guard", "post", "render"} {
		t.Run(stage, func(t *testing.T) {
			r := tools.New(nil)
			ran := false
			def := tools.Definition{Name: "t", Execute: func(context.Context, tools.Call) (tools.Output, error) {
				ran = true
				return tools.Output{Value: 1}, nil
			}}
			switch stage {
			case "pre":
				r.OnPreExecute(testScope(t), "*", func(context.Context, *tools.Call) error { panic("bug") })
			case "guard":
				r.OnGuard(testScope(t), "*", func(context.Context, tools.Call) error { panic("bug") })
			case "post":
				r.OnPostExecute(testScope(t), "*", func(context.Context, tools.Call, *tools.Result) error { panic("bug") })
			case "render":
				def.Render = func(any) []tools.Content { panic("bug") }
			}
			mustRegister(t, r, def)
			res := r.Execute(context.Background(), testCaller, "t", nil)
			if res.Err == nil || !strings.Contains(res.Err.Error(), "panicked: bug") {
				t.Fatalf("Err = %v, want the panic as an error", res.Err)
			}
			if errors.Is(res.Err, tools.ErrRefused) {
				t.Error("a panicking hook passes for a policy refusal")
			}
			if res.Value != nil {
				t.Errorf("Value = %v on error", res.Value)
			}
			if wantRan := stage == "post" || stage == "render"; ran != wantRan {
				t.Errorf("tool ran = %v, want %v (a broken hook fails closed)", ran, wantRan)
			}
		})
	}
}

// TestPostExecutePrecedence pins who decides the model-facing content when
// the tool projected its own and a post-execute hook intervenes.
func TestPostExecutePrecedence(t *testing.T) {
	projection := []tools.Content{tools.Text("projected by the tool")}
	render := func(v any) []tools.Content {
		b, _ := json.Marshal(v)
		return []tools.Content{tools.Text("rendered " + string(b))}
	}
	tests := []struct {
		name        string
		hook        tools.PostExecuteHook
		wantValue   any
		wantContent []tools.Content
	}{
		{"untouched keeps the projection",
			func(context.Context, tools.Call, *tools.Result) error { return nil },
			map[string]any{"n": 1.0}, projection},
		{"value replaced re-renders and drops the projection",
			func(_ context.Context, _ tools.Call, r *tools.Result) error {
				r.Value = map[string]any{"n": 2}
				return nil
			},
			map[string]any{"n": 2}, []tools.Content{tools.Text(`rendered {"n":2}`)}},
		{"value replaced by an equal copy still re-renders",
			func(_ context.Context, _ tools.Call, r *tools.Result) error {
				r.Value = map[string]any{"n": 1.0}
				return nil
			},
			map[string]any{"n": 1.0}, []tools.Content{tools.Text(`rendered {"n":1}`)}},
		{"value replaced by a scalar",
			func(_ context.Context, _ tools.Call, r *tools.Result) error { r.Value = "redacted"; return nil },
			"redacted", []tools.Content{tools.Text(`rendered "redacted"`)}},
		{"content replaced keeps the value",
			func(_ context.Context, _ tools.Call, r *tools.Result) error {
				r.Content = []tools.Content{tools.Text("by the hook")}
				return nil
			},
			map[string]any{"n": 1.0}, []tools.Content{tools.Text("by the hook")}},
		{"both replaced: the hook's content wins",
			func(_ context.Context, _ tools.Call, r *tools.Result) error {
				r.Value = 7
				r.Content = []tools.Content{tools.Text("by the hook")}
				return nil
			},
			7, []tools.Content{tools.Text("by the hook")}},
		{"content cleared re-renders the value",
			func(_ context.Context, _ tools.Call, r *tools.Result) error { r.Content = nil; return nil },
			map[string]any{"n": 1.0}, []tools.Content{tools.Text(`rendered {"n":1}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tools.New(nil)
			mustRegister(t, r, tools.Definition{
				Name: "mcp__s__t",
				Execute: func(context.Context, tools.Call) (tools.Output, error) {
					return tools.Output{Value: map[string]any{"n": 1.0}, Content: projection}, nil
				},
				Render: render,
			})
			r.OnPostExecute(testScope(t), "mcp__*", tt.hook)
			res := r.Execute(context.Background(), testCaller, "mcp__s__t", nil)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if diff := cmp.Diff(tools.Result{Value: tt.wantValue, Content: tt.wantContent}, res); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPostExecuteChain(t *testing.T) {
	// The second hook sees the first one's replacement, and its own content
	// replacement stands.
	r := tools.New(nil)
	mustRegister(t, r, tools.Definition{Name: "t", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		return tools.Output{Value: 1}, nil
	}})
	var seen any
	r.OnPostExecute(testScope(t), "*", func(_ context.Context, _ tools.Call, res *tools.Result) error { res.Value = 2; return nil })
	r.OnPostExecute(testScope(t), "*", func(_ context.Context, _ tools.Call, res *tools.Result) error {
		seen = res.Value
		res.Content = append([]tools.Content{tools.Text("note")}, res.Content...)
		return nil
	})
	res := r.Execute(context.Background(), testCaller, "t", nil)
	if seen != 2 {
		t.Errorf("second hook saw %v, want 2", seen)
	}
	want := tools.Result{Value: 2, Content: []tools.Content{tools.Text("note"), tools.Text("2")}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		out    tools.Output
		render func(any) []tools.Content
		want   []tools.Content
	}{
		{"nil render is JSON without HTML escaping", tools.Output{Value: map[string]any{"html": "<a&b>"}}, nil,
			[]tools.Content{tools.Text(`{"html":"<a&b>"}`)}},
		{"nil value", tools.Output{}, nil, []tools.Content{tools.Text("null")}},
		{"nil render gives a string as plain text", tools.Output{Value: "13:44 \"CET\" <b>\n"}, nil,
			[]tools.Content{tools.Text("13:44 \"CET\" <b>\n")}},
		{"nil render gives an empty string as empty text", tools.Output{Value: ""}, nil, []tools.Content{tools.Text("")}},
		{"nil render keeps a JSON string as JSON", tools.Output{Value: json.RawMessage(`"x"`)}, nil, []tools.Content{tools.Text(`"x"`)}},
		{"nil render gives strings in a slice as JSON", tools.Output{Value: []string{"a"}}, nil, []tools.Content{tools.Text(`["a"]`)}},
		{"custom render", tools.Output{Value: 3}, func(v any) []tools.Content { return []tools.Content{tools.Text("three")} },
			[]tools.Content{tools.Text("three")}},
		{"render returning nil is empty content", tools.Output{Value: 3}, func(any) []tools.Content { return nil },
			[]tools.Content{}},
		{"tool projection skips render", tools.Output{Value: 3, Content: []tools.Content{tools.Text("own")}},
			func(any) []tools.Content { panic("render ran") }, []tools.Content{tools.Text("own")}},
		{"empty projection is kept", tools.Output{Value: 3, Content: []tools.Content{}},
			func(any) []tools.Content { panic("render ran") }, []tools.Content{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tools.New(nil)
			mustRegister(t, r, tools.Definition{Name: "t", Render: tt.render, Execute: func(context.Context, tools.Call) (tools.Output, error) {
				return tt.out, nil
			}})
			res := r.Execute(context.Background(), testCaller, "t", nil)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if diff := cmp.Diff(tt.want, res.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unmarshalable value", func(t *testing.T) {
		r := tools.New(nil)
		mustRegister(t, r, tools.Definition{Name: "t", Execute: func(context.Context, tools.Call) (tools.Output, error) {
			return tools.Output{Value: make(chan int)}, nil
		}})
		if res := r.Execute(context.Background(), testCaller, "t", nil); res.Err == nil || res.Value != nil {
			t.Errorf("Result = %+v, want an error", res)
		}
	})
}

type answer struct {
	Answer any `json:"answer"`
}

func TestOutputValidation(t *testing.T) {
	schema := `{
		"type": "object",
		"properties": {
			"answer": {"type": "integer"},
			"items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
			"odd key": {"type": "boolean"}
		},
		"required": ["answer"]
	}`
	tests := []struct {
		name  string
		value any
		want  string // "" for valid
	}{
		{"valid map", map[string]any{"answer": 42}, ""},
		{"valid raw", json.RawMessage(`{"answer":1,"items":[{"id":"a"}]}`), ""},
		{"valid struct", answer{Answer: 3}, ""},
		{"wrong type", map[string]any{"answer": "42"}, `at value.answer: type:`},
		{"struct wrong type", answer{Answer: 1.5}, `at value.answer: type:`},
		{"missing", map[string]any{}, `at value: required: missing properties: ["answer"]`},
		{"nested item", json.RawMessage(`{"answer":1,"items":[{"id":"a"},{"id":5}]}`), `at value.items[1].id: type:`},
		{"nested required", json.RawMessage(`{"answer":1,"items":[{"id":"a"},{}]}`), `at value.items[1]: required`},
		{"quoted key", json.RawMessage(`{"answer":1,"odd key":"yes"}`), `at value["odd key"]: type:`},
		{"decoded map", map[string]any{"answer": 42.0, "items": []any{map[string]any{"id": "a"}}}, ""},
		{"decoded map wrong type", map[string]any{"answer": 1.5}, `at value.answer: type:`},
		{"decoded map nested", map[string]any{"answer": 1.0, "items": []any{map[string]any{"id": 5.0}}}, `at value.items[0].id: type:`},
		{"nil slice is null", map[string]any{"answer": 1.0, "items": []any(nil)}, `at value.items: type:`},
		{"not an object", 7, `at value: type:`},
		{"not JSON", func() {}, `the value is not JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tools.New(nil)
			mustRegister(t, r, tools.Definition{Name: "t", OutputSchema: json.RawMessage(schema), Execute: func(context.Context, tools.Call) (tools.Output, error) {
				return tools.Output{Value: tt.value}, nil
			}})
			res := r.Execute(context.Background(), testCaller, "t", nil)
			if tt.want == "" {
				if res.Err != nil {
					t.Fatalf("valid output refused: %v", res.Err)
				}
				return
			}
			if !errors.Is(res.Err, tools.ErrInvalidOutput) || errors.Is(res.Err, tools.ErrRefused) {
				t.Fatalf("Err = %v, want ErrInvalidOutput", res.Err)
			}
			if !strings.Contains(res.Err.Error(), tt.want) {
				t.Errorf("Err = %q, want it to contain %q", res.Err, tt.want)
			}
			if !strings.HasPrefix(res.Err.Error(), `invalid tool output of "t"`) {
				t.Errorf("Err = %q, want it to start with the kind and the tool", res.Err)
			}
			if res.Value != nil {
				t.Errorf("Value = %v on invalid output", res.Value)
			}
		})
	}
}

func TestCancellationReachesTool(t *testing.T) {
	r := tools.New(nil)
	started := make(chan struct{})
	sawCancel := make(chan error, 1)
	mustRegister(t, r, tools.Definition{Name: "slow", Execute: func(ctx context.Context, _ tools.Call) (tools.Output, error) {
		close(started)
		<-ctx.Done()
		sawCancel <- ctx.Err()
		return tools.Output{}, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result, 1)
	go func() { done <- r.Execute(ctx, testCaller, "slow", nil) }()
	<-started
	cancel()
	res := <-done
	if err := <-sawCancel; !errors.Is(err, context.Canceled) {
		t.Errorf("the tool's ctx ended with %v, want context.Canceled", err)
	}
	if !errors.Is(res.Err, context.Canceled) || errors.Is(res.Err, tools.ErrRefused) {
		t.Errorf("Err = %v, want context.Canceled", res.Err)
	}
}

func TestCanceledAfterToolError(t *testing.T) {
	// The tool ignores ctx and fails on its own after the caller gave up:
	// both the cancellation and the tool's error stay reachable.
	r := tools.New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	mustRegister(t, r, tools.Definition{Name: "t", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		cancel()
		return tools.Output{}, &quotaError{}
	}})
	mustRegister(t, r, tools.Definition{Name: "ok", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		cancel()
		return tools.Output{Value: 1}, nil
	}})
	res := r.Execute(ctx, testCaller, "t", nil)
	var qe *quotaError
	if !errors.Is(res.Err, context.Canceled) || !errors.As(res.Err, &qe) {
		t.Errorf("Err = %v, want both context.Canceled and the tool's error", res.Err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	if res := r.Execute(ctx, testCaller, "ok", nil); !errors.Is(res.Err, context.Canceled) || res.Value != nil {
		t.Errorf("a success after the caller gave up: Result = %+v, want context.Canceled", res)
	}
}

func TestPreCanceledNeverDispatches(t *testing.T) {
	past, cancelPast := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelPast()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  func() (context.Context, func(r *tools.Registry))
		want error
		hook bool // whether hooks may run
	}{
		{"canceled", func() (context.Context, func(*tools.Registry)) { return canceled, nil }, context.Canceled, false},
		{"deadline passed", func() (context.Context, func(*tools.Registry)) { return past, nil }, context.DeadlineExceeded, false},
		{"canceled by a guard", func() (context.Context, func(*tools.Registry)) {
			ctx, cancel := context.WithCancel(context.Background())
			return ctx, func(r *tools.Registry) {
				r.OnGuard(testScope(t), "*", func(context.Context, tools.Call) error { cancel(); return nil })
			}
		}, context.Canceled, true},
		{"guard waiting for approval gives up", func() (context.Context, func(*tools.Registry)) {
			ctx, cancel := context.WithCancel(context.Background())
			return ctx, func(r *tools.Registry) {
				r.OnGuard(testScope(t), "*", func(ctx context.Context, _ tools.Call) error { cancel(); <-ctx.Done(); return ctx.Err() })
			}
		}, context.Canceled, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tools.New(nil)
			dispatched, hooked := false, false
			mustRegister(t, r, tools.Definition{Name: "t", Execute: func(context.Context, tools.Call) (tools.Output, error) {
				dispatched = true
				return tools.Output{}, nil
			}})
			r.OnPreExecute(testScope(t), "*", func(context.Context, *tools.Call) error { hooked = true; return nil })
			ctx, install := tt.ctx()
			if install != nil {
				install(r)
			}
			res := r.Execute(ctx, testCaller, "t", nil)
			if dispatched {
				t.Error("the tool was dispatched")
			}
			if hooked && !tt.hook {
				t.Error("hooks ran for a call canceled before it began")
			}
			if !errors.Is(res.Err, tt.want) || errors.Is(res.Err, tools.ErrRefused) {
				t.Errorf("Err = %v, want %v and not a refusal", res.Err, tt.want)
			}
		})
	}
}

func TestExecuteHoldsNoLock(t *testing.T) {
	// A tool that registers and unregisters tools, and an assemble during
	// its run, must not deadlock.
	r := tools.New(nil)
	mustRegister(t, r, tools.Definition{Name: "t", Execute: func(ctx context.Context, _ tools.Call) (tools.Output, error) {
		unreg, err := r.Register(testScope(t), noop("inner"))
		if err != nil {
			return tools.Output{}, err
		}
		defer unreg()
		a, err := r.Assemble(ctx, testCaller)
		return tools.Output{Value: len(a.Tools)}, err
	}})
	r.OnGuard(testScope(t), "*", func(context.Context, tools.Call) error {
		r.OnPreExecute(testScope(t), "unrelated", func(context.Context, *tools.Call) error { return nil })
		return nil
	})
	res := r.Execute(context.Background(), testCaller, "t", nil)
	if res.Err != nil || res.Value != 2 {
		t.Errorf("Result = %+v, want Value 2", res)
	}
}

// TestDispatchThroughExecute pins the meta-tool pattern the package doc
// describes: a tool that runs another through r.Execute keeps the child's
// projection and lets the child's guards and errors show through.
func TestDispatchThroughExecute(t *testing.T) {
	r := tools.New(nil)
	projection := []tools.Content{tools.Text("child projection")}
	mustRegister(t, r, tools.Definition{Name: "mcp__s__ok", Execute: func(_ context.Context, call tools.Call) (tools.Output, error) {
		if !call.Caller.ImageInput {
			return tools.Output{}, errors.New("caller lost on the way")
		}
		return tools.Output{Value: "v", Content: projection}, nil
	}})
	mustRegister(t, r, noop("mcp__s__denied"))
	r.OnGuard(testScope(t), "mcp__s__denied", func(context.Context, tools.Call) error { return errNeedsApproval })
	mustRegister(t, r, tools.Definition{Name: "mcp_call", Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
		var in struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(call.Args, &in); err != nil {
			return tools.Output{}, err
		}
		res := r.Execute(ctx, call.Caller, in.Tool, in.Arguments)
		return tools.Output{Value: res.Value, Content: res.Content}, res.Err
	}})
	caller := tools.Caller{Kind: "model", ImageInput: true}
	res := r.Execute(context.Background(), caller, "mcp_call", json.RawMessage(`{"tool":"mcp__s__ok"}`))
	if diff := cmp.Diff(tools.Result{Value: "v", Content: projection}, res); diff != "" {
		t.Errorf("dispatched (-want +got):\n%s", diff)
	}
	res = r.Execute(context.Background(), caller, "mcp_call", json.RawMessage(`{"tool":"mcp__s__denied"}`))
	var te *tools.ToolError
	if !errors.As(res.Err, &te) || te.Tool != "mcp_call" || !errors.Is(res.Err, tools.ErrRefused) || !errors.Is(res.Err, errNeedsApproval) {
		t.Errorf("denied child: Err = %v, want mcp_call's tool error carrying the child's refusal", res.Err)
	}
	masked := caller.Restrict(tools.Mask{Deny: []string{"mcp__s__ok"}})
	res = r.Execute(context.Background(), masked, "mcp_call", json.RawMessage(`{"tool":"mcp__s__ok"}`))
	if !errors.Is(res.Err, tools.ErrUnknownTool) {
		t.Errorf("child hidden by the mask: Err = %v, want ErrUnknownTool", res.Err)
	}
}

type withMap struct{ M map[string]int }
type withAny struct{ V any }

// TestPostExecuteValueIdentity pins what counts as replacing the value, for
// every kind of value a tool may return: a hook that reassigns the same
// value keeps the tool's projection, a new value drops it.
func TestPostExecuteValueIdentity(t *testing.T) {
	shared := map[string]int{"a": 1}
	slice := []int{1, 2}
	ptr := &withMap{}
	tests := []struct {
		name     string
		value    any
		same     any // assigned by the hook: the value kept
		replaced any // assigned by the hook: a new value
	}{
		{"int", 1, 1, 2},
		{"string", "a", "a", "b"},
		{"map", shared, shared, map[string]int{"a": 1}},
		{"slice", slice, slice, []int{1, 2}},
		{"slice shortened", slice, slice, slice[:1]},
		{"pointer", ptr, ptr, &withMap{}},
		{"struct with a map", withMap{M: shared}, withMap{M: shared}, withMap{M: map[string]int{"b": 2}}},
		{"struct holding a map in an interface", withAny{V: shared}, withAny{V: shared}, withAny{V: 3}},
		{"raw JSON", json.RawMessage(`{}`), nil, json.RawMessage(`[]`)},
		{"type change", 1, 1, int64(1)},
		{"to nil", 1, 1, nil},
	}
	projection := []tools.Content{tools.Text("projection")}
	for _, tt := range tests {
		for _, replace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/replace=%v", tt.name, replace), func(t *testing.T) {
				r := tools.New(nil)
				mustRegister(t, r, tools.Definition{
					Name: "t",
					Execute: func(context.Context, tools.Call) (tools.Output, error) {
						return tools.Output{Value: tt.value, Content: projection}, nil
					},
					Render: func(any) []tools.Content { return []tools.Content{tools.Text("rendered")} },
				})
				r.OnPostExecute(testScope(t), "*", func(_ context.Context, _ tools.Call, res *tools.Result) error {
					switch {
					case replace:
						res.Value = tt.replaced
					case tt.same != nil:
						res.Value = tt.same
					}
					return nil
				})
				res := r.Execute(context.Background(), testCaller, "t", nil)
				want := "projection"
				if replace {
					want = "rendered"
				}
				if res.Err != nil || len(res.Content) != 1 || res.Content[0].Text != want {
					t.Errorf("Result = %+v, want content %q", res, want)
				}
			})
		}
	}
}

func TestCancellationCause(t *testing.T) {
	errWithdrawn := errors.New("approval withdrawn")
	r := tools.New(nil)
	mustRegister(t, r, noop("t"))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errWithdrawn)
	res := r.Execute(ctx, testCaller, "t", nil)
	if !errors.Is(res.Err, context.Canceled) || !errors.Is(res.Err, errWithdrawn) {
		t.Errorf("Err = %v, want both context.Canceled and the cause", res.Err)
	}
	if want := `Error: tool call "t" canceled before dispatch: context canceled (approval withdrawn)`; res.Content[0].Text != want {
		t.Errorf("content = %q, want %q", res.Content[0].Text, want)
	}
}
