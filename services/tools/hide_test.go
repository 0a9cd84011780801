package tools_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestOnHide: a hidden tool leaves List, Names and Assemble (for the
// callers the hook names) but stays callable, so its guard gives the
// reason; removing the hook offers it again, and both are assembly
// changes.
func TestOnHide(t *testing.T) {
	r := tools.New(nil)
	mustRegister(t, r, noop("a"))
	mustRegister(t, r, noop("b"))
	var changes int
	r.OnAssemblyChange(testScope(t), func() { changes++ })
	hooks := newScope(t, "hider")
	remove := r.OnHide(hooks, func(c tools.Caller, d *tools.Definition) bool { return d.Name == "b" && c.Kind == "test" })
	r.OnGuard(hooks, "b", func(context.Context, tools.Call) error { return errors.New("b is held") })

	if got := r.Names(testCaller); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("Names = %v, want [a]", got)
	}
	if got := r.Names(tools.Caller{Kind: "other"}); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names for another caller = %v, want [a b]", got)
	}
	if got := len(r.List(testCaller)); got != 1 {
		t.Errorf("List has %d tools, want 1", got)
	}
	asm, err := r.Assemble(t.Context(), testCaller)
	if err != nil || len(asm.Tools) != 1 || asm.Tools[0].Name != "a" {
		t.Errorf("Assemble = %v (%v), want only a", asm.Tools, err)
	}
	if got := len(r.ListAll()); got != 2 {
		t.Errorf("ListAll has %d tools, want 2", got)
	}
	if _, ok := r.Lookup(testCaller, "b"); !ok {
		t.Error("Lookup does not find the hidden tool")
	}
	res := r.Execute(t.Context(), testCaller, "b", nil)
	if !errors.Is(res.Err, tools.ErrRefused) || !strings.Contains(res.Err.Error(), "b is held") {
		t.Errorf("a call of the hidden tool: %v, want its guard's refusal", res.Err)
	}
	remove()
	if got := r.Names(testCaller); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names after remove = %v, want [a b]", got)
	}
	if changes != 2 {
		t.Errorf("%d assembly changes, want 2 (added, removed)", changes)
	}
}

// TestOnHidePanics: a hook that panics is logged and hides the tool it
// could not decide (fail closed: the policy's hook withholds a changed
// definition from a model), and only that one.
func TestOnHidePanics(t *testing.T) {
	r := tools.New(&tools.Options{Logger: slog.New(slog.DiscardHandler)})
	mustRegister(t, r, noop("a"))
	mustRegister(t, r, noop("b"))
	r.OnHide(testScope(t), func(_ tools.Caller, d *tools.Definition) bool {
		if d.Name == "a" {
			panic("hook bug")
		}
		return false
	})
	if got := r.Names(testCaller); !cmp.Equal(got, []string{"b"}) {
		t.Errorf("Names = %v, want [b]", got)
	}
}

// TestHiddenToolRefusedBeforeItsSchemaSpeaks: a call to a tool hidden
// from its caller whose arguments fail the tool's input schema gets the
// guard's refusal, not the schema's error, which would quote a definition
// the caller is not shown (the policy hides a tool whose definition
// changed); an offered tool still gets the schema's error.
func TestHiddenToolRefusedBeforeItsSchemaSpeaks(t *testing.T) {
	r := tools.New(&tools.Options{Logger: slog.New(slog.DiscardHandler)})
	for _, name := range []string{"held", "offered"} {
		d := noop(name)
		d.InputSchema = []byte(`{"type":"object","properties":{"SEND_THE_PASSWORD":{"type":"string"}},"required":["SEND_THE_PASSWORD"]}`)
		mustRegister(t, r, d)
	}
	s := testScope(t)
	r.OnHide(s, func(_ tools.Caller, d *tools.Definition) bool { return d.Name == "held" })
	r.OnGuard(s, "held", func(context.Context, tools.Call) error { return errors.New("held until trusted") })
	res := r.Execute(t.Context(), testCaller, "held", []byte(`{}`))
	if res.Err == nil || strings.Contains(res.Err.Error(), "PASSWORD") || !strings.Contains(res.Err.Error(), "held until trusted") {
		t.Errorf("held: %v, want the guard's refusal without the schema's text", res.Err)
	}
	res = r.Execute(t.Context(), testCaller, "offered", []byte(`{}`))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "SEND_THE_PASSWORD") {
		t.Errorf("offered: %v, want the schema's error", res.Err)
	}
}
