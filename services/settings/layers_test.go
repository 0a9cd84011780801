package settings

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// layered opens a store over a user file and a project file with these
// contents ("" for no file) and the environment env.
func layered(t *testing.T, user, project string, env ...string) *Store {
	t.Helper()
	dir := t.TempDir()
	upath := filepath.Join(dir, "home", "settings.yaml")
	ppath := filepath.Join(dir, "proj", ".dsh", "settings.yaml")
	for _, f := range []struct{ path, content string }{{upath, user}, {ppath, project}} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			t.Fatal(err)
		}
		if f.content != "" {
			if err := os.WriteFile(f.path, []byte(f.content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := Open(upath, slog.New(slog.DiscardHandler), WithProject(ppath), WithEnviron(env))
	if err != nil {
		t.Fatal(err)
	}
	st.debounce = 10 * time.Millisecond
	return st
}

// TestLayerOrder: a section is the user file's, overridden key by key by
// the project file's, overridden by the environment's; a section one
// layer alone holds is that layer's.
func TestLayerOrder(t *testing.T) {
	const user = "ui:\n  theme: dark\n  width: 80\nmcp-adapter:\n  disabled: [a]\n"
	for _, tt := range []struct {
		name, project string
		env           []string
		want          ui
	}{
		{"user alone", "", nil, ui{Theme: "dark", Width: 80}},
		{"project over user", "ui:\n  theme: light\n", nil, ui{Theme: "light", Width: 80}},
		{"env over project", "ui:\n  theme: light\n  width: 90\n", []string{"DSH_SETTINGS__UI__width=100"}, ui{Theme: "light", Width: 100}},
		{"env over user", "", []string{"DSH_SETTINGS__UI__theme=solar", "HOME=/x"}, ui{Theme: "solar", Width: 80}},
		{"env section map, refined by a key", "", []string{"DSH_SETTINGS__UI={theme: a, width: 1}", "DSH_SETTINGS__UI__width=2"}, ui{Theme: "a", Width: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := layered(t, user, tt.project, tt.env...)
			got, ok, err := Read[ui](st, "ui")
			if err != nil || !ok {
				t.Fatalf("Read: %v, ok %v", err, ok)
			}
			if got != tt.want {
				t.Errorf("ui = %+v, want %+v", got, tt.want)
			}
			// A section no other layer touches is the user's.
			a, _, err := Read[adapter](st, "mcp-adapter")
			if err != nil || !cmp.Equal(a.Disabled, []string{"a"}) {
				t.Errorf("mcp-adapter = %+v, %v", a, err)
			}
		})
	}
}

// TestEnvTyping: an override's value is read as YAML; a name or value
// that cannot be read fails Open naming the variable.
func TestEnvTyping(t *testing.T) {
	st := layered(t, "", "",
		"DSH_SETTINGS__T__int=42",
		"DSH_SETTINGS__T__float=1.5",
		"DSH_SETTINGS__T__bool=true",
		`DSH_SETTINGS__T__quoted="42"`,
		"DSH_SETTINGS__T__word=dark",
		"DSH_SETTINGS__T__list=[a, b]",
		"DSH_SETTINGS__T__map={k: 1}",
		"DSH_SETTINGS__T__empty=",
		"DSH_SETTINGS__T__deep__under_score=x",
		"DSH_SETTINGS__MY_SECTION__camelKey=1",
	)
	got, ok, err := Read[map[string]any](st, "t")
	if err != nil || !ok {
		t.Fatalf("Read: %v, ok %v", err, ok)
	}
	want := map[string]any{
		"int": 42, "float": 1.5, "bool": true, "quoted": "42", "word": "dark",
		"list": []any{"a", "b"}, "map": map[string]any{"k": 1}, "empty": nil,
		"deep": map[string]any{"under_score": "x"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("section t (-want +got):\n%s", d)
	}
	if v, ok, err := Read[map[string]int](st, "my-section"); err != nil || !ok || v["camelKey"] != 1 {
		t.Errorf("my-section = %v, %v, %v; want camelKey 1 (the section's _ is -, keys as written)", v, ok, err)
	}

	for _, tt := range []struct{ env, want string }{
		{"DSH_SETTINGS__T__x=[a", "DSH_SETTINGS__T__x"},
		{"DSH_SETTINGS__T____x=1", "an empty key"},
		{"DSH_SETTINGS__9T__x=1", "DSH_SETTINGS__9T__x"},
	} {
		_, err := Open(filepath.Join(t.TempDir(), "s.yaml"), slog.New(slog.DiscardHandler), WithEnviron([]string{tt.env}))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open with %s: %v, want an error naming %q", tt.env, err, tt.want)
		}
	}
	_, err = Open(filepath.Join(t.TempDir(), "s.yaml"), slog.New(slog.DiscardHandler),
		WithEnviron([]string{"DSH_SETTINGS__T__a=1", "DSH_SETTINGS__T__a__b=2"}))
	if err == nil || !strings.Contains(err.Error(), "DSH_SETTINGS__T__a__b") || !strings.Contains(err.Error(), "by DSH_SETTINGS__T__a") {
		t.Errorf("a key under a scalar: %v, want an error naming both variables", err)
	}
}

// TestUpdateWritesUserOnly: fn sees the user file's section, not the
// merged one; the write goes to the user file alone, keeps its comments,
// and copies no project or environment value into it.
func TestUpdateWritesUserOnly(t *testing.T) {
	const user = "# mine\nui:\n  theme: dark # my theme\n"
	const project = "ui:\n  theme: light\n  width: 120\nproj-only:\n  x: 1\n"
	st := layered(t, user, project, "DSH_SETTINGS__UI__width=100", "DSH_SETTINGS__EXTRA__y=2")
	err := Update(st, "ui", func(v *ui) error {
		if *v != (ui{Theme: "dark"}) {
			t.Errorf("fn got %+v, want the user file's {Theme: dark}", *v)
		}
		v.Theme = "blue"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, st), "# mine\nui:\n  theme: blue # my theme\n"; got != want {
		t.Errorf("user file:\n%s\nwant:\n%s", got, want)
	}
	if b, err := os.ReadFile(st.ProjectPath()); err != nil || string(b) != project {
		t.Errorf("project file changed: %q, %v", b, err)
	}
	// The merged view still has the other layers over the new value.
	if got, _, err := Read[ui](st, "ui"); err != nil || got != (ui{Theme: "light", Width: 100}) {
		t.Errorf("Read after Update = %+v, %v", got, err)
	}
}

// TestProjectParseError: a project file that does not parse is reported
// with its path and line by Read, and is not written; the user file is
// still updated.
func TestProjectParseError(t *testing.T) {
	const project = "ui:\n  theme: [light\n"
	st := layered(t, "ui:\n  theme: dark\n", project)
	_, _, err := Read[ui](st, "ui")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != st.ProjectPath() || pe.Line != 2 {
		t.Fatalf("Read: %v, want a ParseError at %s:2", err, st.ProjectPath())
	}
	if !strings.Contains(err.Error(), st.ProjectPath()) {
		t.Errorf("the message does not name the project file: %v", err)
	}
	if _, err := st.Effective(); !errors.As(err, &pe) {
		t.Errorf("Effective: %v, want the ParseError", err)
	}
	if err := Update(st, "ui", func(v *ui) error { v.Width = 5; return nil }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(st.ProjectPath()); err != nil || string(b) != project {
		t.Errorf("project file changed: %q, %v", b, err)
	}
	if got := readFile(t, st); got != "ui:\n  theme: dark\n  width: 5\n" {
		t.Errorf("user file: %q", got)
	}
}

// TestEffectiveSources: every effective key is listed with the layer its
// value came from: a file's path, or the variable that set it.
func TestEffectiveSources(t *testing.T) {
	st := layered(t,
		"ui:\n  theme: dark\n  width: 80\nmcp-adapter:\n  serverIds: {github: 1}\n",
		"ui:\n  theme: light\nproj:\n  list: [a, b]\n",
		"DSH_SETTINGS__UI__width=100", "DSH_SETTINGS__ENV={a: 1, b: {c: x}}")
	got, err := st.Effective()
	if err != nil {
		t.Fatal(err)
	}
	want := []Value{
		{"env.a", 1, "DSH_SETTINGS__ENV"},
		{"env.b.c", "x", "DSH_SETTINGS__ENV"},
		{"mcp-adapter.serverIds.github", 1, st.Path()},
		{"proj.list", []any{"a", "b"}, st.ProjectPath()},
		{"ui.theme", "light", st.ProjectPath()},
		{"ui.width", 100, "DSH_SETTINGS__UI__width"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Effective (-want +got):\n%s", d)
	}
}

// TestWatchProject: an edit of the project file reaches a watcher as the
// merged section.
func TestWatchProject(t *testing.T) {
	st := layered(t, "ui:\n  theme: dark\n  width: 80\n", "")
	ch, remove := watchUI(t, st, testScope(t))
	defer remove()
	if err := os.WriteFile(st.ProjectPath(), []byte("ui:\n  theme: light\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		ev := next(t, ch)
		if ev.err != nil {
			t.Fatal(ev.err)
		}
		if ev.v == (ui{Theme: "light", Width: 80}) {
			return
		}
	}
}
