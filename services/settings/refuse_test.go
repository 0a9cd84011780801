package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCorruptFileIsNeverRewritten(t *testing.T) {
	tests := []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"bad indentation", "ui:\n  theme: dark\n width: 3\nb: 1\n", 3, ""},
		{"unclosed flow", "ui: {theme: dark\nb: 1\n", 1, "did not find expected ',' or '}'"},
		{"tab indentation", "ui:\n\ttheme: dark\n", 2, "cannot start any token"},
		{"duplicate section", "ui: {}\nb: 1\nui: {theme: x}\n", 3, `section "ui" appears twice (first on line 1)`},
		{"top level is a list", "- ui\n- b\n", 1, "top level must be a mapping"},
		{"two documents", "ui: {}\n---\nb: 1\n", 2, "second YAML document"},
		{"bad key after a multi-line flow", "a: [1,\n  2]\nb: 1\nc: [\n", 4, ""},
		{"bad quote", "a: 1\nb: \"open\nc: 2\n", 2, ""},
		{"unknown alias", "ui: *nope\n", 1, "unknown anchor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openAt(t, tt.content)
			before, err := os.Stat(st.Path())
			if err != nil {
				t.Fatal(err)
			}
			called := false
			err = Update(st, "ui", func(u *ui) error { called = true; u.Theme = "x"; return nil })
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Update = %v, want a *ParseError", err)
			}
			if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) || pe.File != st.Path() {
				t.Errorf("ParseError %+v, want line %d and %q", pe, tt.line, tt.msg)
			}
			if want := st.Path() + ":"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "fix the file by hand") {
				t.Errorf("message %q does not name %s or say what to do", err, want)
			}
			if called {
				t.Error("fn ran on a file that does not parse")
			}
			if got := readFile(t, st); got != tt.content {
				t.Errorf("the file changed:\n%q\nwant\n%q", got, tt.content)
			}
			after, _ := os.Stat(st.Path())
			if !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
				t.Error("the file was replaced")
			}
			if _, _, err := Read[ui](st, "ui"); !errors.As(err, &pe) {
				t.Errorf("Read = %v, want a *ParseError", err)
			}
		})
	}
}

func TestSectionOfTheWrongShapeIsRefused(t *testing.T) {
	const content = "ui: 3 # a number, not a mapping\nb: 2\n"
	st := openAt(t, content)
	err := Update(st, "ui", func(u *ui) error { u.Theme = "x"; return nil })
	if err == nil || !strings.Contains(err.Error(), `settings.yaml:1: section "ui"`) {
		t.Fatalf("Update = %v, want a refusal naming the section and line", err)
	}
	if got := readFile(t, st); got != content {
		t.Errorf("file changed to %q", got)
	}
	// Other sections stay usable.
	if err := Update(st, "b", func(n *int) error { *n = 5; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, st), "ui: 3 # a number, not a mapping\nb: 5\n"; got != want {
		t.Errorf("file %q, want %q", got, want)
	}
}

func TestFnErrorWritesNothing(t *testing.T) {
	st := openAt(t, "")
	boom := errors.New("no")
	if err := Update(st, "ui", func(u *ui) error { u.Theme = "x"; return boom }); !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want fn's error", err)
	}
	if _, err := os.Stat(st.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed update created the file: %v", err)
	}
}

func TestRead(t *testing.T) {
	st := openAt(t, commented)
	a, ok, err := Read[adapter](st, "mcp-adapter")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if diff := cmp.Diff(adapter{IDs: map[string]int{"github": 1, "web": 2}, Disabled: []string{"web"}}, a); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	u, ok, err := Read[ui](st, "nothing")
	if err != nil || ok || u != (ui{}) {
		t.Errorf("missing section: %v %v %v", u, ok, err)
	}
	if _, _, err := Read[ui](st, "Bad_Name"); err == nil {
		t.Error("an invalid section name was accepted")
	}
	missing, err := Open(filepath.Join(t.TempDir(), "nope", "settings.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Read[ui](missing, "ui"); ok || err != nil {
		t.Errorf("missing file: %v %v", ok, err)
	}
}

func TestUpdateCreatesFileAndDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", ".dsh", "settings.yaml")
	st, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Update(st, "ui", func(u *ui) error { u.Theme = "dark"; return nil }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Read[ui](st, "ui")
	if err != nil || !ok || got.Theme != "dark" {
		t.Errorf("Read after Update = %v %v %v", got, ok, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new settings file mode %v, want 0600", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
