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
	"time"

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

// newScope returns a scope called id, disposed when the test ends.
func newScope(t testing.TB, id string) *host.Scope {
	s := host.NewScope(context.Background(), id, nil)
	t.Cleanup(func() {
		if err := s.Dispose(time.Second); err != nil {
			t.Error(err)
		}
	})
	return s
}

// testScope is the scope of a registration whose owner does not matter.
func testScope(t testing.TB) *host.Scope { return newScope(t, "test") }

func mustRegister(t testing.TB, r *tools.Registry, def tools.Definition) func() {
	t.Helper()
	unregister, err := r.Register(testScope(t), def)
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
	first.Origin = tools.Origin{Server: "github", RawName: "search"}
	if _, err := r.Register(newScope(t, "github"), first); err != nil {
		t.Fatal(err)
	}

	second := noop("mcp__github__search")
	second.Description = "second"
	unregister, err := r.Register(newScope(t, "other"), second)
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

// TestRegisterOrigin: the instance comes from the scope, whatever the
// definition says; the server and raw name are the caller's.
func TestRegisterOrigin(t *testing.T) {
	r := tools.New(nil)
	d := noop("mcp__gh__search")
	d.Origin = tools.Origin{Instance: "forged", Server: "gh", RawName: "search"}
	if _, err := r.Register(newScope(t, "github"), d); err != nil {
		t.Fatal(err)
	}
	got, _ := r.Get("mcp__gh__search")
	if diff := cmp.Diff(tools.Origin{Instance: "github", Server: "gh", RawName: "search"}, got.Origin); diff != "" {
		t.Errorf("Origin (-want +got):\n%s", diff)
	}
}

// TestRegisterOwnedByScope: dispose removes what the scope registered and
// only that; an unregister called first leaves nothing on the scope, and a
// later dispose does not remove a newer registration of the same name.
func TestRegisterOwnedByScope(t *testing.T) {
	r := tools.New(nil)
	s := host.NewScope(context.Background(), "owner", nil)
	mine, err := r.Register(s, noop("mine"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(s, noop("kept")); err != nil {
		t.Fatal(err)
	}
	other := mustRegister(t, r, noop("other"))
	defer other()
	if diff := cmp.Diff([]string{"tool mine", "tool kept"}, s.Effects()); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
	mine()
	if diff := cmp.Diff([]string{"tool kept"}, s.Effects()); diff != "" {
		t.Errorf("an early unregister left something on the scope (-want +got):\n%s", diff)
	}
	// A newer registration of the released name, by someone else, must
	// survive the first owner's dispose.
	mustRegister(t, r, noop("mine"))
	if err := s.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mine", "other"}, r.Names(testCaller)); diff != "" {
		t.Errorf("after dispose (-want +got):\n%s", diff)
	}
}

// TestNilScopePanics: every registration needs its owner.
func TestNilScopePanics(t *testing.T) {
	r := tools.New(nil)
	calls := map[string]func(){
		"Register":     func() { r.Register(nil, noop("t")) },
		"OnPreExecute": func() { r.OnPreExecute(nil, "*", func(context.Context, *tools.Call) error { return nil }) },
		"OnGuard":      func() { r.OnGuard(nil, "*", func(context.Context, tools.Call) error { return nil }) },
		"OnPostExecute": func() {
			r.OnPostExecute(nil, "*", func(context.Context, tools.Call, *tools.Result) error { return nil })
		},
		"OnAssemble": func() {
			r.OnAssemble(nil, func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
				return next(ctx, a)
			})
		},
		"OnChange":         func() { r.OnChange(nil, func(tools.Change) {}) },
		"OnAssemblyChange": func() { r.OnAssemblyChange(nil, func() {}) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			defer func() {
				p := recover()
				if msg, _ := p.(string); !strings.Contains(msg, "*host.Scope") {
					t.Errorf("panic = %v, want one that names the missing scope", p)
				}
			}()
			call()
		})
	}
	if r.Len() != 0 {
		t.Errorf("a registration without a scope was kept: %v", r.Names(testCaller))
	}
}

func TestUnregisterIdentity(t *testing.T) {
	r := tools.New(nil)
	var changes []tools.Change
	r.OnChange(testScope(t), func(c tools.Change) { changes = append(changes, c) })

	unregA, err := r.Register(newScope(t, "a"), noop("t"))
	if err != nil {
		t.Fatal(err)
	}
	unregA()
	unregA() // idempotent
	if _, ok := r.Get("t"); ok {
		t.Fatal("t still registered after unregister")
	}

	unregB, err := r.Register(newScope(t, "b"), noop("t"))
	if err != nil {
		t.Fatal(err)
	}
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
			_, err := tools.New(nil).Register(testScope(t), d)
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
	r.OnChange(testScope(t), func(c tools.Change) {
		got = append(got, fmt.Sprintf("%s %s", c.Kind, c.Name))
		// A handler that registers a companion tool must not deadlock,
		// and its change comes after the one being delivered.
		if c.Kind == tools.Registered && c.Name == "main" {
			u, err := r.Register(testScope(t), noop("shadow"))
			if err != nil {
				t.Errorf("Register from a change handler: %v", err)
				return
			}
			unregShadow = u
		}
	})
	r.OnChange(testScope(t), func(c tools.Change) {
		if c.Name == "boom" {
			panic("handler bug")
		}
	})
	var after []string
	r.OnChange(testScope(t), func(c tools.Change) { after = append(after, c.Name) })

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
	r.OnChange(testScope(t), func(c tools.Change) {
		mu.Lock()
		if c.Kind == tools.Registered {
			seen[c.Name]++
		} else {
			seen[c.Name]--
		}
		mu.Unlock()
	})
	assemblies := 0
	r.OnAssemblyChange(testScope(t), func() { mu.Lock(); assemblies++; mu.Unlock() })
	ctx := context.Background()
	const workers, rounds = 8, 200
	for w := range workers {
		changes.Add(1)
		go func() {
			defer changes.Done()
			for i := range rounds {
				name := fmt.Sprintf("w%d_%d", w, i%5)
				unreg, err := r.Register(testScope(t), noop(name))
				if err != nil {
					t.Errorf("Register(%s): %v", name, err)
					return
				}
				if res := r.Execute(ctx, testCaller, name, json.RawMessage(`{"i":1}`)); res.Err != nil {
					t.Errorf("Execute(%s): %v", name, res.Err)
				}
				// Every worker races for one shared name.
				if u, err := r.Register(testScope(t), noop("shared")); err == nil {
					r.Execute(ctx, testCaller, "shared", nil)
					u()
				} else if !errors.Is(err, tools.ErrDuplicateName) {
					t.Errorf("Register(shared): %v", err)
				}
				remove := r.OnPreExecute(testScope(t), "w*", func(context.Context, *tools.Call) error { return nil })
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
	if assemblies < 2*workers*rounds {
		t.Errorf("%d assembly changes, want at least one per registration and unregistration (%d)", assemblies, 2*workers*rounds)
	}
}

func TestHookPatternWarning(t *testing.T) {
	var logs strings.Builder
	r := tools.New(&tools.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, p := range []string{"*", "mcp__*", "mcp__*__search_*", strings.Repeat("a", 64) + "*"} {
		r.OnGuard(testScope(t), p, func(context.Context, tools.Call) error { return nil })
	}
	if logs.Len() != 0 {
		t.Fatalf("warned about a usable pattern: %s", logs.String())
	}
	for _, p := range []string{"", "mcp.github.*", "mcp__(a|b)__*", strings.Repeat("a", 65) + "*"} {
		logs.Reset()
		r.OnGuard(testScope(t), p, func(context.Context, tools.Call) error { return nil })
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

// TestAssemblyChange: every cause of a change in what Assemble returns
// fires the event once, after the Change handlers of the same change, and a
// handler whose scope is disposed hears nothing more.
func TestAssemblyChange(t *testing.T) {
	var logs strings.Builder
	r := tools.New(&tools.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var got []string
	r.OnChange(testScope(t), func(c tools.Change) { got = append(got, c.Kind.String()+" "+c.Name) })
	follower := host.NewScope(context.Background(), "follower", nil)
	r.OnAssemblyChange(follower, func() { panic("handler bug") })
	events := 0
	r.OnAssemblyChange(follower, func() {
		events++
		// The registry is not locked: the handler may read it.
		a, err := r.Assemble(context.Background(), testCaller)
		if err != nil {
			t.Error(err)
		}
		got = append(got, fmt.Sprintf("assembly (%d tools)", len(a.Tools)))
	})
	take := func() []string { out := got; got = nil; return out }
	passthrough := func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		return next(ctx, a)
	}

	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"register", func() { mustRegister(t, r, noop("a")) }, []string{"registered a", "assembly (1 tools)"}},
		{"unregister", func() { mustRegister(t, r, noop("b"))(); take() }, nil},
		{"unregister, then", func() {
			u := mustRegister(t, r, noop("b"))
			take()
			u()
		}, []string{"unregistered b", "assembly (1 tools)"}},
		{"dispose of a tool's scope", func() {
			s := host.NewScope(context.Background(), "owner", nil)
			if _, err := r.Register(s, noop("c")); err != nil {
				t.Fatal(err)
			}
			take()
			s.Dispose(time.Second)
		}, []string{"unregistered c", "assembly (1 tools)"}},
		{"assemble handler added", func() { r.OnAssemble(testScope(t), passthrough) }, []string{"assembly (1 tools)"}},
		{"assemble handler removed", func() {
			remove := r.OnAssemble(testScope(t), passthrough)
			take()
			remove()
			remove() // idempotent: no second event
		}, []string{"assembly (1 tools)"}},
		{"assemble handler's scope disposed", func() {
			s := host.NewScope(context.Background(), "folder", nil)
			r.OnAssemble(s, passthrough)
			take()
			s.Dispose(time.Second)
		}, []string{"assembly (1 tools)"}},
		{"AssemblyChanged", r.AssemblyChanged, []string{"assembly (1 tools)"}},
		{"a change handler registers a companion", func() {
			s := testScope(t)
			off := r.OnChange(s, func(c tools.Change) {
				if c.Name == "main" && c.Kind == tools.Registered {
					mustRegister(t, r, noop("shadow"))
				}
			})
			mustRegister(t, r, noop("main"))
			off()
		}, []string{"registered main", "assembly (3 tools)", "registered shadow", "assembly (3 tools)"}},
		{"follower disposed", func() {
			follower.Dispose(time.Second)
			mustRegister(t, r, noop("d"))
			r.AssemblyChanged()
		}, []string{"registered d"}},
	}
	for _, st := range steps {
		st.do()
		if diff := cmp.Diff(st.want, take()); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", st.name, diff)
		}
	}
	// A panicking handler is logged and keeps no other from the event.
	if n := strings.Count(logs.String(), "assembly change handler panicked"); n != events || n == 0 {
		t.Errorf("logged %d panics of the assembly change handler, want one per event (%d):\n%s", n, events, logs.String())
	}
}
