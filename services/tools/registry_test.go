package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// noop is a tool that returns its arguments as its value.
func noop(name string) tools.Definition {
	return tools.Definition{
		Name:        name,
		Description: "returns its arguments",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			return tools.Output{Value: call.Args}, nil
		},
	}
}

func mustRegister(t testing.TB, r *tools.Registry, def tools.Definition) func() {
	t.Helper()
	unregister, err := r.Register(def)
	if err != nil {
		t.Fatalf("Register(%q): %v", def.Name, err)
	}
	return unregister
}

var testCaller = tools.Caller{Kind: "test"}

func TestRegisterDuplicate(t *testing.T) {
	r := tools.New(nil)
	first := noop("mcp__github__search")
	first.Description = "first"
	first.Origin = tools.Origin{Instance: "github", Server: "github", RawName: "search"}
	mustRegister(t, r, first)

	second := noop("mcp__github__search")
	second.Description = "second"
	second.Origin = tools.Origin{Instance: "other"}
	unregister, err := r.Register(second)
	if !errors.Is(err, tools.ErrDuplicateName) {
		t.Fatalf("second Register = %v, want ErrDuplicateName", err)
	}
	if unregister != nil {
		t.Error("a failed Register returned an unregister func")
	}
	for _, want := range []string{`"mcp__github__search"`, `instance "github"`, `MCP server "github"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if got, _ := r.Get("mcp__github__search"); got.Description != "first" {
		t.Errorf("after a duplicate, Get gives %q, want the first registration", got.Description)
	}
}

func TestUnregisterIdentity(t *testing.T) {
	r := tools.New(nil)
	var changes []tools.Change
	r.OnChange(nil, func(c tools.Change) { changes = append(changes, c) })

	a := noop("t")
	a.Origin.Instance = "a"
	unregA := mustRegister(t, r, a)
	unregA()
	unregA() // idempotent
	if _, ok := r.Get("t"); ok {
		t.Fatal("t still registered after unregister")
	}

	b := noop("t")
	b.Origin.Instance = "b"
	unregB := mustRegister(t, r, b)
	unregA() // must not remove b
	got, ok := r.Get("t")
	if !ok || got.Origin.Instance != "b" {
		t.Fatalf("a stale unregister removed a later registration: Get = %+v, %v", got.Origin, ok)
	}
	unregB()

	want := []tools.Change{
		{Kind: tools.Registered, Name: "t", Origin: tools.Origin{Instance: "a"}},
		{Kind: tools.Unregistered, Name: "t", Origin: tools.Origin{Instance: "a"}},
		{Kind: tools.Registered, Name: "t", Origin: tools.Origin{Instance: "b"}},
		{Kind: tools.Unregistered, Name: "t", Origin: tools.Origin{Instance: "b"}},
	}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

func TestRegisterInvalidDefinition(t *testing.T) {
	base := noop("t")
	tests := []struct {
		name string
		mod  func(*tools.Definition)
		want string
	}{
		{"no execute", func(d *tools.Definition) { d.Execute = nil }, "Execute is nil"},
		{"input not JSON", func(d *tools.Definition) { d.InputSchema = json.RawMessage(`{"type":`) }, "InputSchema must be a JSON object"},
		{"input an array", func(d *tools.Definition) { d.InputSchema = json.RawMessage(`[]`) }, "InputSchema must be a JSON object"},
		{"input a string", func(d *tools.Definition) { d.InputSchema = json.RawMessage(`"object"`) }, "InputSchema must be a JSON object"},
		{"output not JSON", func(d *tools.Definition) { d.OutputSchema = json.RawMessage(`{`) }, "OutputSchema"},
		{"output bad type", func(d *tools.Definition) { d.OutputSchema = json.RawMessage(`{"type":5}`) }, "OutputSchema"},
		{"output unresolvable ref", func(d *tools.Definition) { d.OutputSchema = json.RawMessage(`{"$ref":"#/$defs/missing"}`) }, "OutputSchema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base
			tt.mod(&d)
			_, err := tools.New(nil).Register(d)
			if !errors.Is(err, tools.ErrInvalidDefinition) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Register = %v, want ErrInvalidDefinition mentioning %q", err, tt.want)
			}
		})
	}
}

func TestRegisterCopiesSchemas(t *testing.T) {
	r := tools.New(nil)
	in := []byte(`{"type":"object"}`)
	d := noop("t")
	d.InputSchema = in
	mustRegister(t, r, d)
	copy(in, `{"type":"string"}`)
	got, _ := r.Get("t")
	if string(got.InputSchema) != `{"type":"object"}` {
		t.Errorf("InputSchema changed with the caller's buffer: %s", got.InputSchema)
	}
}

func TestListAndLookupFollowMask(t *testing.T) {
	r := tools.New(nil)
	for _, n := range []string{"mcp__web__fetch", "read", "mcp__github__search", "mcp__github__push"} {
		mustRegister(t, r, noop(n))
	}
	names := func(defs []tools.Definition) []string {
		var out []string
		for _, d := range defs {
			out = append(out, d.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"mcp__github__push", "mcp__github__search", "mcp__web__fetch", "read"}, names(r.List(testCaller))); diff != "" {
		t.Errorf("List without mask (-want +got):\n%s", diff)
	}
	masked := tools.Caller{Kind: "model", Mask: &tools.Mask{Allow: []string{"mcp__*"}, Deny: []string{"*__push"}}}
	if diff := cmp.Diff([]string{"mcp__github__search", "mcp__web__fetch"}, names(r.List(masked))); diff != "" {
		t.Errorf("List with mask (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcp__github__search", "mcp__web__fetch"}, r.Names(masked)); diff != "" {
		t.Errorf("Names with mask (-want +got):\n%s", diff)
	}
	if _, ok := r.Lookup(masked, "mcp__github__push"); ok {
		t.Error("Lookup found a tool the mask denies")
	}
	if _, ok := r.Lookup(masked, "mcp__github__search"); !ok {
		t.Error("Lookup missed a visible tool")
	}
	if _, ok := r.Get("mcp__github__push"); !ok {
		t.Error("Get must ignore masks")
	}
	if r.Len() != 4 {
		t.Errorf("Len = %d, want 4", r.Len())
	}
}

func TestChangeHandlerReentrant(t *testing.T) {
	r := tools.New(nil)
	var got []string
	var unregShadow func()
	r.OnChange(nil, func(c tools.Change) {
		got = append(got, fmt.Sprintf("%s %s", c.Kind, c.Name))
		// A handler that registers a companion tool must not deadlock,
		// and its change comes after the one being delivered.
		if c.Kind == tools.Registered && c.Name == "main" {
			u, err := r.Register(noop("shadow"))
			if err != nil {
				t.Errorf("Register from a change handler: %v", err)
				return
			}
			unregShadow = u
		}
	})
	r.OnChange(nil, func(c tools.Change) {
		if c.Name == "boom" {
			panic("handler bug")
		}
	})
	var after []string
	r.OnChange(nil, func(c tools.Change) { after = append(after, c.Name) })

	unreg := mustRegister(t, r, noop("main"))
	mustRegister(t, r, noop("boom"))
	unreg()
	unregShadow()
	want := []string{"registered main", "registered shadow", "registered boom", "unregistered main", "unregistered shadow"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"main", "shadow", "boom", "main", "shadow"}, after); diff != "" {
		t.Errorf("a panicking handler kept a later one from changes (-want +got):\n%s", diff)
	}
}

func TestScopeDisposeRemovesHandlers(t *testing.T) {
	r := tools.New(nil)
	s := host.NewScope(context.Background(), "follower", nil)
	var mu sync.Mutex
	var n int
	r.OnChange(s, func(tools.Change) { mu.Lock(); n++; mu.Unlock() })
	r.OnGuard(s, "*", func(context.Context, tools.Call) error { return errors.New("no") })
	mustRegister(t, r, noop("a"))
	if res := r.Execute(context.Background(), testCaller, "a", nil); !errors.Is(res.Err, tools.ErrRefused) {
		t.Fatalf("guard bound to a live scope did not run: %v", res.Err)
	}
	if err := s.Dispose(0); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, r, noop("b"))
	if n != 1 {
		t.Errorf("change handler saw %d changes, want 1 (none after dispose)", n)
	}
	if res := r.Execute(context.Background(), testCaller, "a", nil); res.Err != nil {
		t.Errorf("guard survived its scope: %v", res.Err)
	}
}

func TestZeroRegistry(t *testing.T) {
	var r tools.Registry
	mustRegister(t, &r, noop("a"))
	if res := r.Execute(context.Background(), testCaller, "a", nil); res.Err != nil {
		t.Fatal(res.Err)
	}
}

// TestConcurrency registers, executes and unregisters from many goroutines
// while hooks and handlers come and go; run it with -race.
func TestConcurrency(t *testing.T) {
	r := tools.New(nil)
	var changes sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int{}
	r.OnChange(nil, func(c tools.Change) {
		mu.Lock()
		if c.Kind == tools.Registered {
			seen[c.Name]++
		} else {
			seen[c.Name]--
		}
		mu.Unlock()
	})
	ctx := context.Background()
	const workers, rounds = 8, 200
	for w := range workers {
		changes.Add(1)
		go func() {
			defer changes.Done()
			for i := range rounds {
				name := fmt.Sprintf("w%d_%d", w, i%5)
				unreg, err := r.Register(noop(name))
				if err != nil {
					t.Errorf("Register(%s): %v", name, err)
					return
				}
				if res := r.Execute(ctx, testCaller, name, json.RawMessage(`{"i":1}`)); res.Err != nil {
					t.Errorf("Execute(%s): %v", name, res.Err)
				}
				// Every worker races for one shared name.
				if u, err := r.Register(noop("shared")); err == nil {
					r.Execute(ctx, testCaller, "shared", nil)
					u()
				} else if !errors.Is(err, tools.ErrDuplicateName) {
					t.Errorf("Register(shared): %v", err)
				}
				remove := r.OnPreExecute(nil, "w*", func(context.Context, *tools.Call) error { return nil })
				if _, err := r.Assemble(ctx, testCaller); err != nil {
					t.Error(err)
				}
				r.List(testCaller)
				remove()
				unreg()
			}
		}()
	}
	changes.Wait()
	if r.Len() != 0 {
		t.Errorf("Len = %d after every unregister, want 0", r.Len())
	}
	for name, n := range seen {
		if n != 0 {
			t.Errorf("changes for %s do not balance: %+d", name, n)
		}
	}
}

func TestHookPatternWarning(t *testing.T) {
	var logs strings.Builder
	r := tools.New(&tools.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, p := range []string{"*", "mcp__*", "mcp__*__search_*", strings.Repeat("a", 64) + "*"} {
		r.OnGuard(nil, p, func(context.Context, tools.Call) error { return nil })
	}
	if logs.Len() != 0 {
		t.Fatalf("warned about a usable pattern: %s", logs.String())
	}
	for _, p := range []string{"", "mcp.github.*", "mcp__(a|b)__*", strings.Repeat("a", 65) + "*"} {
		logs.Reset()
		r.OnGuard(nil, p, func(context.Context, tools.Call) error { return nil })
		if !strings.Contains(logs.String(), "can match no tool name") {
			t.Errorf("pattern %q: no warning", p)
		}
	}
}

func TestUnregisterDuringExecute(t *testing.T) {
	r := tools.New(nil)
	started, release := make(chan struct{}), make(chan struct{})
	unreg := mustRegister(t, r, tools.Definition{Name: "t", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		close(started)
		<-release
		return tools.Output{Value: "done"}, nil
	}})
	done := make(chan tools.Result)
	go func() { done <- r.Execute(context.Background(), testCaller, "t", nil) }()
	<-started
	unreg() // must not wait for the call, nor break it
	if res := r.Execute(context.Background(), testCaller, "t", nil); !errors.Is(res.Err, tools.ErrUnknownTool) {
		t.Errorf("call after unregister: %v, want ErrUnknownTool", res.Err)
	}
	close(release)
	if res := <-done; res.Err != nil || res.Value != "done" {
		t.Errorf("in-flight call: %+v", res)
	}
}
