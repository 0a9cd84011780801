package commands

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"  a  b\tc ", []string{"a", "b", "c"}, ""},
		{`city="New York" state=NY`, []string{"city=New York", "state=NY"}, ""},
		{`'it''s' "a \"q\"" back\ slash`, []string{"its", `a "q"`, "back slash"}, ""},
		{`'single keeps \ as is'`, []string{`single keeps \ as is`}, ""},
		{`""`, []string{""}, ""},
		{`name="open`, nil, "unclosed \" quote"},
	}
	for _, tt := range tests {
		got, err := SplitArgs(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SplitArgs(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("SplitArgs(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("SplitArgs(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestLastWord(t *testing.T) {
	tests := []struct {
		in     string
		before []string
		last   string
	}{
		{"", nil, ""},
		{"dep", nil, "dep"},
		{"dep=E", nil, "dep=E"},
		{"department=Engineering ", []string{"department=Engineering"}, ""},
		{"a b=c", []string{"a"}, "b=c"},
		{`a "New Y`, []string{"a"}, "New Y"}, // an unclosed quote is the word being typed
	}
	for _, tt := range tests {
		before, last := LastWord(tt.in)
		if diff := cmp.Diff(tt.before, before, cmpopts.EquateEmpty()); diff != "" || last != tt.last {
			t.Errorf("LastWord(%q) = %q, %q; want %q, %q", tt.in, before, last, tt.before, tt.last)
		}
	}
}

// TestComplete: names while the name is typed, then the command's own
// completion of its input; a command without one offers nothing.
func TestComplete(t *testing.T) {
	r := New()
	var gotInput string
	for _, c := range []Command{
		{Name: "read", Handler: echo, Complete: func(_ context.Context, input string) ([]string, error) {
			gotInput = input
			return []string{"x=1", "x=2"}, nil
		}},
		{Name: "resources", Handler: echo},
		{Name: "fail", Handler: echo, Complete: func(context.Context, string) ([]string, error) { return nil, errors.New("server down") }},
	} {
		if _, err := r.Register(testScope(t), c); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for line, want := range map[string][]string{
		"/re":          {"/read", "/resources"},
		"/":            {"/fail", "/read", "/resources"},
		"/read tmpl x": {"x=1", "x=2"},
		"/resources a": nil,
	} {
		got, err := r.Complete(ctx, line)
		if err != nil {
			t.Errorf("Complete(%q): %v", line, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Complete(%q) (-want +got):\n%s", line, diff)
		}
	}
	if gotInput != "tmpl x" {
		t.Errorf("the command's Complete got input %q, want %q", gotInput, "tmpl x")
	}
	if _, err := r.Complete(ctx, "/fail x"); err == nil || !strings.Contains(err.Error(), "server down") {
		t.Errorf("Complete of a failing command = %v, want its error", err)
	}
	if _, err := r.Complete(ctx, "/nope x"); err == nil || !strings.Contains(err.Error(), "unknown command /nope") {
		t.Errorf("Complete of an unknown command = %v", err)
	}
}

// TestCompleteCommand: the built-in instance registers /complete, which
// answers one suggestion per line.
func TestCompleteCommand(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(nil)
	if err := h.Update(context.Background(), &host.Composition{File: "t.yml"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	r, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatal("no commands service")
	}
	if _, err := r.Register(testScope(t), Command{Name: "pick", Handler: echo, Complete: func(_ context.Context, input string) ([]string, error) {
		return []string{"colour=red", "colour=green"}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	caller := tools.Caller{Kind: "test"}
	if got := r.Run(context.Background(), caller, "/complete /pick colour="); got != (Reply{Text: "colour=red\ncolour=green"}) {
		t.Errorf("/complete /pick colour= = %+v", got)
	}
	if got := r.Run(context.Background(), caller, "/complete /pi"); got != (Reply{Text: "/pick"}) {
		t.Errorf("/complete /pi = %+v", got)
	}
	if got := r.Run(context.Background(), caller, "/complete /complete x"); got != (Reply{Text: "(no completions)"}) {
		t.Errorf("/complete of a command without completion = %+v", got)
	}
}
