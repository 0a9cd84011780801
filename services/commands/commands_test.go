package commands

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// echo replies with what it was given, so tests can see the parse.
func echo(_ context.Context, inv Invocation) Reply {
	return Reply{Text: "[" + inv.Input + "] " + inv.Caller.Kind}
}

// testScope returns a scope disposed when the test ends.
func testScope(t *testing.T) *host.Scope {
	s := host.NewScope(context.Background(), "test", nil)
	t.Cleanup(func() {
		if err := s.Dispose(time.Second); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestRegisterValidates(t *testing.T) {
	tests := []struct {
		name    string
		cmd     Command
		wantErr string
	}{
		{"ok", Command{Name: "mcp", Handler: echo}, ""},
		{"digits and dashes", Command{Name: "a1-b_c", Handler: echo}, ""},
		{"empty", Command{Name: "", Handler: echo}, "must match"},
		{"slash", Command{Name: "/mcp", Handler: echo}, "must match"},
		// An MCP prompt's command: named like a tool, capitals included.
		{"prompt", Command{Name: "mcp__GitHub__review-pr", Handler: echo}, ""},
		{"64 characters", Command{Name: "a" + strings.Repeat("b", 63), Handler: echo}, ""},
		{"65 characters", Command{Name: "a" + strings.Repeat("b", 64), Handler: echo}, "must match"},
		{"dot", Command{Name: "mcp.x", Handler: echo}, "must match"},
		{"leading digit", Command{Name: "1mcp", Handler: echo}, "must match"},
		{"leading underscore", Command{Name: "_mcp", Handler: echo}, "must match"},
		{"no handler", Command{Name: "mcp"}, "no handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New().Register(testScope(t), tt.cmd)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Register error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestRegisterDuplicateAndRemove(t *testing.T) {
	r := New()
	holder := host.NewScope(context.Background(), "fold", nil)
	defer holder.Dispose(0)
	remove, err := r.Register(holder, Command{Name: "mcp", Handler: echo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(testScope(t), Command{Name: "mcp", Handler: echo}); err == nil || !strings.Contains(err.Error(), `already registered by instance "fold"`) {
		t.Fatalf("duplicate Register error = %v", err)
	}
	remove()
	// A second registration after removal works, and the stale remove does
	// not take it away.
	if _, err := r.Register(testScope(t), Command{Name: "mcp", Description: "second", Handler: echo}); err != nil {
		t.Fatalf("Register after remove: %v", err)
	}
	remove()
	if got := r.List(); len(got) != 1 || got[0].Description != "second" {
		t.Fatalf("List after stale remove = %+v, want the second registration", got)
	}
}

func TestScopeDisposeRemoves(t *testing.T) {
	r := New()
	s := host.NewScope(context.Background(), "t", nil)
	if _, err := r.Register(s, Command{Name: "mcp", Handler: echo}); err != nil {
		t.Fatal(err)
	}
	remove, err := r.Register(s, Command{Name: "early", Handler: echo})
	if err != nil {
		t.Fatal(err)
	}
	remove()
	if diff := cmp.Diff([]string{"command /mcp"}, s.Effects()); diff != "" {
		t.Errorf("an early remove left something on the scope (-want +got):\n%s", diff)
	}
	if err := s.Dispose(0); err != nil {
		t.Fatal(err)
	}
	if got := r.List(); len(got) != 0 {
		t.Fatalf("List after dispose = %+v, want none", got)
	}
}

func TestRegisterNilScopePanics(t *testing.T) {
	r := New()
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "*host.Scope") {
			t.Errorf("panic = %q, want one that names the missing scope", msg)
		}
		if got := r.List(); len(got) != 0 {
			t.Errorf("a command without a scope was kept: %+v", got)
		}
	}()
	r.Register(nil, Command{Name: "mcp", Handler: echo})
}

func TestRun(t *testing.T) {
	r := New()
	for _, n := range []string{"mcp", "help"} {
		if _, err := r.Register(testScope(t), Command{Name: n, Handler: echo}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Register(testScope(t), Command{Name: "boom", Handler: func(context.Context, Invocation) Reply { panic("kaput") }}); err != nil {
		t.Fatal(err)
	}
	caller := tools.Caller{Kind: "console"}
	tests := []struct {
		line string
		want Reply
	}{
		{"/mcp", Reply{Text: "[] console"}},
		{"/mcp list github", Reply{Text: "[list github] console"}},
		{"  /mcp   list  ", Reply{Text: "[list] console"}},
		{"/mcp\tconfig", Reply{Text: "[config] console"}},
		{"mcp config", Reply{Text: "[config] console"}},
		{"/nope x", Reply{Text: "unknown command /nope — known commands: /boom, /help, /mcp", Error: true}},
		{"/", Reply{Text: "no command given — known commands: /boom, /help, /mcp", Error: true}},
		{"/boom", Reply{Text: "/boom failed: kaput — a bug in the plugin that registered it; the log has the stack to report", Error: true}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got := r.Run(context.Background(), caller, tt.line)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Run(%q) mismatch (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestRunEmptyRegistry(t *testing.T) {
	var r Registry // the zero value is ready to use
	got := r.Run(context.Background(), tools.Caller{}, "/x")
	want := Reply{Text: "unknown command /x — no commands are registered", Error: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("mismatch (-want +got):\n%s", diff)
	}
}

func TestListSorted(t *testing.T) {
	r := New()
	for _, n := range []string{"zeta", "alpha", "mid"} {
		if _, err := r.Register(testScope(t), Command{Name: n, Handler: echo}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range r.List() {
		got = append(got, c.Name)
	}
	if diff := cmp.Diff([]string{"alpha", "mid", "zeta"}, got); diff != "" {
		t.Fatalf("List order (-want +got):\n%s", diff)
	}
}

func TestBuiltinPlugin(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir()) // other built-ins may keep data there
	h := host.New(nil)
	if err := h.Update(context.Background(), &host.Composition{File: "t.yml"}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	r, ok := host.Lookup(h, Key)
	if !ok || r == nil {
		t.Fatalf("no commands service from the built-in instance; status %+v", h.Status())
	}
	if _, err := r.Register(testScope(t), Command{Name: "x", Handler: echo}); err != nil {
		t.Fatal(err)
	}
	for _, st := range h.Status() {
		if st.ID == "commands" && (st.Plugin != "commands" || st.State != host.StateActive) {
			t.Fatalf("commands instance: %+v", st)
		}
	}
}

// TestFunc: a Func handler gets the input after the name; its text is the
// reply, its error an error reply.
func TestFunc(t *testing.T) {
	r := New()
	upper := Func(func(_ context.Context, input string) (string, error) {
		if input == "" {
			return "", errors.New("say something")
		}
		return strings.ToUpper(input), nil
	})
	if _, err := r.Register(testScope(t), Command{Name: "up", Handler: upper}); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]Reply{
		"/up hello there": {Text: "HELLO THERE"},
		"/up":             {Text: "say something", Error: true},
	} {
		if got := r.Run(context.Background(), tools.Caller{Kind: "test"}, line); got != want {
			t.Errorf("%s = %+v, want %+v", line, got, want)
		}
	}
}
