package mcpfold

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestCallDispatches(t *testing.T) {
	r := newRig(t)
	res := r.exec(callName, `{"tool":"mcp__github__create_issue","arguments":{"title":"bug","body":"it broke"}}`)
	if res.Err != nil || res.Failed {
		t.Fatalf("mcp_call: %v (failed %v)", res.Err, res.Failed)
	}
	want := map[string]any{"tool": "mcp__github__create_issue", "args": json.RawMessage(`{"title":"bug","body":"it broke"}`)}
	if diff := cmp.Diff(want, res.Value); diff != "" {
		t.Fatalf("value is not the child's verbatim (-want +got):\n%s", diff)
	}
	_, call := r.rec.last(t)
	if call.Name != "mcp__github__create_issue" {
		t.Fatalf("child saw name %q", call.Name)
	}
}

func TestCallArguments(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"absent", `{"tool":"mcp__fs__list_directory"}`, `{}`},
		{"null", `{"tool":"mcp__fs__list_directory","arguments":null}`, `{}`},
		{"verbatim", `{"tool":"mcp__fs__list_directory","arguments":{"path":"/tmp","extra":[1,2]}}`, `{"path":"/tmp","extra":[1,2]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			if res := r.exec(callName, tt.args); res.Err != nil {
				t.Fatalf("mcp_call: %v (%s)", res.Err, text(res))
			}
			_, call := r.rec.last(t)
			if got := string(call.Args); got != tt.want {
				t.Fatalf("child args = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCallNonObjectArgumentsAreRefused(t *testing.T) {
	// An MCP tool's arguments are an object, whatever its schema allows:
	// the registry refuses others before any guard, on every path.
	r := newRig(t, withTools(fakeTool{"mcp__s__any", "", `{}`}))
	res := r.exec(callName, `{"tool":"mcp__s__any","arguments":[1,"two"]}`)
	if e, ok := res.Value.(errorValue); !ok || !strings.Contains(e.Error, "must be a JSON object") {
		t.Fatalf("mcp_call = %v, want an error value saying the arguments must be an object", res.Value)
	}
	if n := r.rec.count(); n != 0 {
		t.Fatalf("the child was called %d times", n)
	}
}

func TestCallErrors(t *testing.T) {
	gated := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"github": 1, "fs": 2}, "disabled": []any{1}})}
	onlyFS := withConfig(func(c *Config) { c.Servers = []string{"fs"} })
	tests := []struct {
		name string
		opts []rigOpt
		args string
		want string
	}{
		{"array", nil, `[]`, `mcp_call expects an object { "tool": string, "arguments"?: object }`},
		{"string", nil, `"mcp__fs__read_file"`, `mcp_call expects an object { "tool": string, "arguments"?: object }`},
		{"null", nil, `null`, `mcp_call expects an object { "tool": string, "arguments"?: object }`},
		{"no tool", nil, `{"arguments":{}}`, `mcp_call requires a string "tool" — discover names with mcp_list`},
		{"tool not a string", nil, `{"tool":3}`, `mcp_call requires a string "tool" — discover names with mcp_list`},
		{"empty tool", nil, `{"tool":""}`, `mcp_call requires a string "tool" — discover names with mcp_list`},
		{"no prefix", nil, `{"tool":"bash"}`, `refusing to call "bash": mcp_call dispatches only tools named with the "mcp__" prefix`},
		{"meta via pathological prefix", []rigOpt{withConfig(func(c *Config) { c.Prefix = "mcp_" })}, `{"tool":"mcp_call"}`,
			`refusing to call "mcp_call": meta-tools are not dispatchable through mcp_call`},
		{"meta without prefix", nil, `{"tool":"mcp_list"}`, `refusing to call "mcp_list": mcp_call dispatches only tools named with the "mcp__" prefix`},
		{"not whitelisted", []rigOpt{onlyFS}, `{"tool":"mcp__github__create_issue","arguments":{"title":"x"}}`,
			`refusing to call "mcp__github__create_issue": server "github" is not in the configured servers list`},
		{"disabled", []rigOpt{withStore(gated)}, `{"tool":"mcp__github__create_issue","arguments":{"title":"x"}}`,
			`refusing to call "mcp__github__create_issue": server "github" is disabled — ask the operator to run "/mcp enable 1" to restore it`},
		{"whitelist before disabled", []rigOpt{withStore(gated), onlyFS}, `{"tool":"mcp__github__create_issue"}`,
			`refusing to call "mcp__github__create_issue": server "github" is not in the configured servers list`},
		{"unknown", nil, `{"tool":"mcp__github__delete_repo"}`,
			`tool "mcp__github__delete_repo" is not registered or not visible in this scope — call mcp_list to see the catalog`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.opts...)
			res := r.exec(callName, tt.args)
			if got := errText(t, res); got != tt.want {
				t.Fatalf("error:\n got %s\nwant %s", got, tt.want)
			}
			if r.rec.count() != 0 {
				t.Fatal("a refused call reached a tool")
			}
		})
	}
}

func TestCallMaskedToolIsUnknown(t *testing.T) {
	r := newRig(t)
	caller := tools.Caller{Kind: "model", Mask: &tools.Mask{Deny: []string{"mcp__github__create_issue"}}}
	res := r.reg.Execute(context.Background(), caller, callName, json.RawMessage(`{"tool":"mcp__github__create_issue","arguments":{}}`))
	got := errText(t, res)
	if !strings.HasPrefix(got, `tool "mcp__github__create_issue" is not registered or not visible in this scope`) {
		t.Fatalf("error = %q", got)
	}
	// The schema of a tool the caller may not see is not leaked by the
	// argument check, and it is not suggested.
	e := res.Value.(errorValue)
	if len(e.InputSchema) != 0 || containsName(e.DidYouMean, "mcp__github__create_issue") {
		t.Fatalf("masked tool leaked: %+v", e)
	}
}

func TestCallDidYouMean(t *testing.T) {
	tests := []struct {
		args string
		want string
	}{
		{`{"tool":"mcp__github__create_isue"}`, "mcp__github__create_issue"},
		{`{"tool":"mcp__gh__create_issue"}`, "mcp__github__create_issue"},
		{`{"tool":"mcp__fs__readfile"}`, "mcp__fs__read_file"},
		{`{"tool":"read_file"}`, "mcp__fs__read_file"},
	}
	r := newRig(t)
	for _, tt := range tests {
		res := r.exec(callName, tt.args)
		e, ok := res.Value.(errorValue)
		if !ok || len(e.DidYouMean) == 0 || e.DidYouMean[0] != tt.want {
			t.Errorf("%s: suggestions %v, want %s first", tt.args, e.DidYouMean, tt.want)
			continue
		}
		if !strings.Contains(text(res), `did you mean "`+tt.want+`"`) {
			t.Errorf("%s: rendered text lacks the suggestion: %s", tt.args, text(res))
		}
	}
	if got := suggest("mcp__zz__qqqqqqqq", []string{"mcp__github__create_issue"}); len(got) != 0 {
		t.Errorf("an unrelated name got suggestions %v", got)
	}
}

func TestCallValidatesArguments(t *testing.T) {
	r := newRig(t)
	tests := []struct {
		name, args, wantIn string
	}{
		{"missing required", `{"tool":"mcp__github__create_issue","arguments":{"body":"no title"}}`, "title"},
		{"wrong type", `{"tool":"mcp__github__create_issue","arguments":{"title":42}}`, "title"},
		{"not an object", `{"tool":"mcp__github__create_issue","arguments":"title"}`, "object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.exec(callName, tt.args)
			e, ok := res.Value.(errorValue)
			if !ok {
				t.Fatalf("value %T, want an error value", res.Value)
			}
			if !strings.HasPrefix(e.Error, `arguments of "mcp__github__create_issue" `) || !strings.Contains(e.Error, tt.wantIn) {
				t.Fatalf("error = %q", e.Error)
			}
			if string(e.InputSchema) != issueSchema {
				t.Fatalf("schema = %s, want the child's", e.InputSchema)
			}
			rendered := text(res)
			if !strings.Contains(rendered, "inputSchema:\n{\n  \"type\": \"object\"") {
				t.Fatalf("rendered text lacks the schema:\n%s", rendered)
			}
		})
	}
	if r.rec.count() != 0 {
		t.Fatal("invalid arguments reached the tool")
	}
	// Integers decoded from JSON validate as integers.
	r2 := newRig(t, withTools(fakeTool{"mcp__s__n", "", `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`}))
	if res := r2.exec(callName, `{"tool":"mcp__s__n","arguments":{"n":3}}`); res.Err != nil || r2.rec.count() != 1 {
		t.Fatalf("a valid integer was refused: %v %s", res.Err, text(res))
	}
}

func TestCallSkipsValidationForUnusableSchemas(t *testing.T) {
	// A schema this validator cannot resolve (an unknown draft, a remote
	// $ref) must not block the call: the child judges its arguments.
	for _, schema := range []string{
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"https://example.invalid/a.json"}}}`,
	} {
		r := newRig(t, withTools(fakeTool{"mcp__s__t", "", schema}))
		if res := r.exec(callName, `{"tool":"mcp__s__t","arguments":{"a":1}}`); res.Err != nil || r.rec.count() != 1 {
			t.Fatalf("schema %s: call blocked: %v %s", schema, res.Err, text(res))
		}
	}
}

type ctxKey struct{}

func TestCallPassesContextAndCaller(t *testing.T) {
	r := newRig(t)
	caller := tools.Caller{Kind: "model", ID: "session-7", ImageInput: true}
	ctx := context.WithValue(context.Background(), ctxKey{}, "marker")
	res := r.reg.Execute(ctx, caller, callName, json.RawMessage(`{"tool":"mcp__fs__read_file","arguments":{"path":"a"}}`))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	childCtx, call := r.rec.last(t)
	if childCtx.Value(ctxKey{}) != "marker" {
		t.Fatal("the child did not get the caller's context")
	}
	if diff := cmp.Diff(caller, call.Caller); diff != "" {
		t.Fatalf("the child saw another caller (-want +got):\n%s", diff)
	}
}

func TestCallCancellation(t *testing.T) {
	started := make(chan struct{})
	reg := tools.New(nil)
	_, err := reg.Register(testScope(t, "client"), tools.Definition{
		Name: "mcp__slow__wait", Origin: tools.Origin{Server: "slow"},
		Execute: func(ctx context.Context, _ tools.Call) (tools.Output, error) {
			close(started)
			<-ctx.Done()
			return tools.Output{}, ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	newRigOn(t, reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result)
	go func() { done <- reg.Execute(ctx, testCaller, callName, json.RawMessage(`{"tool":"mcp__slow__wait"}`)) }()
	<-started
	cancel()
	res := <-done
	if !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled like a native call", res.Err)
	}
}

// newRigOn starts an adapter over an existing registry, without settings
// or commands.
func newRigOn(t *testing.T, reg *tools.Registry) *adapter {
	t.Helper()
	a, err := newAdapter(reg, Defaults(), nil, "fold", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := host.NewScope(context.Background(), "fold", nil)
	t.Cleanup(func() { _ = s.Dispose(0) })
	if err := a.start(s, nil); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCallWrapsChildFailure(t *testing.T) {
	reg := tools.New(nil)
	_, err := reg.Register(testScope(t, "client"), tools.Definition{
		Name: "mcp__s__broken", Origin: tools.Origin{Server: "s"},
		Execute: func(context.Context, tools.Call) (tools.Output, error) {
			return tools.Output{}, errors.New("upstream returned 502")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	newRigOn(t, reg)
	res := reg.Execute(context.Background(), testCaller, callName, json.RawMessage(`{"tool":"mcp__s__broken"}`))
	if got, want := errText(t, res), `MCP tool "mcp__s__broken" failed: upstream returned 502`; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
	if got := text(res); got != `MCP tool "mcp__s__broken" failed: upstream returned 502` {
		t.Fatalf("model text = %q", got)
	}
}

func TestCallForwardsImageContent(t *testing.T) {
	ref := &attachments.Ref{ID: "sha256:abc", MediaType: "image/png", Bytes: 10, Width: 1, Height: 1}
	reg := tools.New(nil)
	_, err := reg.Register(testScope(t, "client"), tools.Definition{
		Name: "mcp__cam__snap", Origin: tools.Origin{Server: "cam"},
		Execute: func(_ context.Context, c tools.Call) (tools.Output, error) {
			if !c.Caller.ImageInput {
				return tools.Output{Value: "no images", Content: []tools.Content{tools.Text("[image omitted]")}}, nil
			}
			return tools.Output{
				Value:   map[string]any{"images": 1},
				Content: []tools.Content{tools.Text("a photo"), {Type: "image", Image: ref}},
			}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	newRigOn(t, reg)
	for _, imageInput := range []bool{true, false} {
		caller := tools.Caller{Kind: "model", ImageInput: imageInput}
		native := reg.Execute(context.Background(), caller, "mcp__cam__snap", nil)
		folded := reg.Execute(context.Background(), caller, callName, json.RawMessage(`{"tool":"mcp__cam__snap"}`))
		if diff := cmp.Diff(native, folded, cmpResult); diff != "" {
			t.Fatalf("ImageInput=%v: mcp_call differs from a native call (-native +folded):\n%s", imageInput, diff)
		}
	}
}

var cmpResult = cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) })

func TestCachesForgetUnregisteredTools(t *testing.T) {
	r := newRig(t, withTools())
	unreg, err := r.reg.Register(testScope(t, "client"), tools.Definition{
		Name: "mcp__s__gone", Description: "Goes away.", InputSchema: json.RawMessage(`{"type":"object"}`), Origin: tools.Origin{Server: "s"},
		Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "ok"}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	r.exec(callName, `{"tool":"mcp__s__gone"}`)
	r.exec(listName, `{"query":"gone"}`)
	cached := func() bool {
		r.a.docs.mu.Lock()
		defer r.a.docs.mu.Unlock()
		_, doc := r.a.docs.m["mcp__s__gone"]
		return doc
	}
	if !cached() {
		t.Fatal("after a search, the search document is not cached")
	}
	unreg()
	if cached() {
		t.Fatal("after unregister, the search document is still cached")
	}
}
