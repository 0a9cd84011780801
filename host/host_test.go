package host

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestReconcile(t *testing.T) {
	const base = `
plugins:
  - id: a
    name: test-noop
    config: {greeting: a1}
  - id: b
    name: test-noop
    config: {greeting: b1}
`
	tests := []struct {
		name       string
		next       string
		wantEvents []string // order-insensitive
		wantStates map[string]State
		same       []string // ids whose scope must be the very same
	}{
		{
			name:       "unchanged",
			next:       base,
			wantStates: map[string]State{"a": StateActive, "b": StateActive},
			same:       []string{"a", "b"},
		},
		{
			name: "added",
			next: base + `
  - id: c
    name: test-noop
    config: {greeting: c1}
`,
			wantEvents: []string{"apply c c1"},
			wantStates: map[string]State{"a": StateActive, "b": StateActive, "c": StateActive},
			same:       []string{"a", "b"},
		},
		{
			name: "removed",
			next: `
plugins:
  - id: a
    name: test-noop
    config: {greeting: a1}
`,
			wantEvents: []string{"dispose b"},
			wantStates: map[string]State{"a": StateActive},
			same:       []string{"a"},
		},
		{
			name:       "changed config",
			next:       strings.Replace(base, "b1", "b2", 1),
			wantEvents: []string{"dispose b", "apply b b2"},
			wantStates: map[string]State{"a": StateActive, "b": StateActive},
			same:       []string{"a"},
		},
		{
			name: "moved and reformatted only",
			next: `
plugins:
  - id: b
    name: test-noop
    config:
      greeting: b1
  - name: test-noop
    id: a
    config:
      greeting: a1
`,
			wantStates: map[string]State{"a": StateActive, "b": StateActive},
			same:       []string{"a", "b"},
		},
		{
			name:       "disabled",
			next:       strings.Replace(base, "config: {greeting: b1}", "disabled: true\n    config: {greeting: b1}", 1),
			wantEvents: []string{"dispose b"},
			wantStates: map[string]State{"a": StateActive, "b": StateDisabled},
			same:       []string{"a"},
		},
		{
			name:       "changed plugin",
			next:       strings.Replace(base, "name: test-noop\n    config: {greeting: b1}", "name: test-optional", 1),
			wantEvents: []string{"dispose b", "apply b none"},
			wantStates: map[string]State{"a": StateActive, "b": StateActive},
			same:       []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, nil)
			apply(t, h, base)
			if diff := cmp.Diff([]string{"apply a a1", "apply b b1"}, sorted(rec.take())); diff != "" {
				t.Fatalf("first apply events (-want +got):\n%s", diff)
			}
			before := scopes(h)
			apply(t, h, tt.next)
			if diff := cmp.Diff(sorted(tt.wantEvents), sorted(rec.take())); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStates, states(h)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			after := scopes(h)
			for _, id := range tt.same {
				if before[id] != after[id] || before[id].disposedNow() {
					t.Errorf("instance %s was replaced or disposed; an unchanged instance must be left alone", id)
				}
			}
		})
	}
}

func TestReconcileDisabledToggledBack(t *testing.T) {
	h := newHost(t, nil)
	const on = "plugins:\n  - {id: a, name: test-noop}\n"
	const off = "plugins:\n  - {id: a, name: test-noop, disabled: true}\n"
	apply(t, h, off)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a disabled entry ran: %q", got)
	}
	apply(t, h, on)
	apply(t, h, off)
	apply(t, h, on)
	want := []string{"apply a hello", "dispose a", "apply a hello"}
	if diff := cmp.Diff(want, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// sameScope compares scopes by identity.
var sameScope = cmp.Comparer(func(a, b *Scope) bool { return a == b })

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestBuiltinDefaultInstance(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, "plugins: []\n")
	st := Find(h.Status(), "test-builtin")
	if st.State != StateActive || st.Detail != "greets with builtin" {
		t.Fatalf("built-in default instance = %+v; want active with default config", st)
	}
	first := scopes(h)["test-builtin"]

	// An entry with its id configures it.
	apply(t, h, "plugins:\n  - id: test-builtin\n    name: test-builtin\n    config: {greeting: custom}\n")
	if st := Find(h.Status(), "test-builtin"); st.Detail != "greets with custom" {
		t.Errorf("configured built-in detail = %q; want greets with custom", st.Detail)
	}
	if !first.disposedNow() {
		t.Error("the default built-in instance was not replaced by the configured one")
	}
	if n := len(h.Status()); n != 1 {
		t.Errorf("status has %d instances; want the built-in once", n)
	}
}

func TestServices(t *testing.T) {
	h := newHost(t, nil)
	// The consumer is listed before its provider: order comes from services.
	apply(t, h, `
plugins:
  - {id: c, name: test-consumer}
  - {id: o, name: test-optional}
  - {id: p, name: test-provider, config: {greeting: hi}}
  - {id: n, name: test-noop}
`)
	got := rec.take()
	for _, dep := range []string{"apply c hi", "apply o hi"} {
		if slices.Index(got, dep) < slices.Index(got, "apply p hi") {
			t.Errorf("events %q: %q ran before its provider", got, dep)
		}
	}
	if diff := cmp.Diff(map[string]State{"c": StateActive, "o": StateActive, "p": StateActive, "n": StateActive}, states(h)); diff != "" {
		t.Fatalf("states (-want +got):\n%s", diff)
	}
	if g, ok := Lookup(h, testKey); !ok || g.greeting != "hi" {
		t.Errorf("Service = %v, %v; want the provider's greeter", g, ok)
	}
	noop := scopes(h)["n"]

	t.Run("provider swap restarts dependents and only them", func(t *testing.T) {
		apply(t, h, `
plugins:
  - {id: c, name: test-consumer}
  - {id: o, name: test-optional}
  - {id: p, name: test-provider, config: {greeting: hey}}
  - {id: n, name: test-noop}
`)
		got := rec.take()
		want := []string{"dispose c", "dispose o", "dispose p", "apply p hey", "apply c hey", "apply o hey"}
		if diff := cmp.Diff(sorted(want), sorted(got)); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
		// Dependents go down before their provider and come up after it.
		if i := slices.Index(got, "dispose p"); i < slices.Index(got, "dispose c") || i < slices.Index(got, "dispose o") {
			t.Errorf("events %q: the provider was disposed before its dependents", got)
		}
		if i := slices.Index(got, "apply p hey"); i > slices.Index(got, "apply c hey") || i > slices.Index(got, "apply o hey") {
			t.Errorf("events %q: a dependent started before its provider", got)
		}
		if scopes(h)["n"] != noop {
			t.Error("an instance that injects nothing was restarted")
		}
	})

	t.Run("provider removed: required pending, optional restarted without", func(t *testing.T) {
		apply(t, h, `
plugins:
  - {id: c, name: test-consumer}
  - {id: o, name: test-optional}
  - {id: n, name: test-noop}
`)
		if diff := cmp.Diff(sorted([]string{"dispose c", "dispose o", "dispose p", "apply o none"}), sorted(rec.take())); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		st := Find(h.Status(), "c")
		if st.State != StatePending || !strings.Contains(st.Err, `"test-greeting"`) || !strings.Contains(st.Err, "no entry provides it") {
			t.Errorf("consumer status = %+v; want pending on test-greeting, saying nothing provides it", st)
		}
		if _, ok := Lookup(h, testKey); ok {
			t.Error("Service still returns the removed provider's value")
		}
	})

	t.Run("provider returns", func(t *testing.T) {
		apply(t, h, `
plugins:
  - {id: c, name: test-consumer}
  - {id: o, name: test-optional}
  - {id: p2, name: test-provider, config: {greeting: back}}
  - {id: n, name: test-noop}
`)
		if diff := cmp.Diff(sorted([]string{"apply p2 back", "dispose o", "apply o back", "apply c back"}), sorted(rec.take())); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]State{"c": StateActive, "o": StateActive, "p2": StateActive, "n": StateActive}, states(h)); diff != "" {
			t.Errorf("states (-want +got):\n%s", diff)
		}
	})

	t.Run("disabled provider", func(t *testing.T) {
		apply(t, h, `
plugins:
  - {id: c, name: test-consumer}
  - {id: p2, name: test-provider, disabled: true}
`)
		rec.take()
		if st := Find(h.Status(), "c"); st.State != StatePending || !strings.Contains(st.Err, `entry "p2" provides it but is disabled`) {
			t.Errorf("consumer status = %+v; want pending, naming the disabled provider", st)
		}
	})

	t.Run("failed provider leaves dependents pending", func(t *testing.T) {
		apply(t, h, `
plugins:
  - {id: c, name: test-consumer}
  - {id: p2, name: test-provider, config: {greeting: back, fail: true}}
`)
		rec.take()
		st := Find(h.Status(), "c")
		if st.State != StatePending || !strings.Contains(st.Err, `instance "p2" is failed`) {
			t.Errorf("consumer status = %+v; want pending, naming the failed provider", st)
		}
		if st := Find(h.Status(), "p2"); st.State != StateFailed || st.Err != "provider told to fail" {
			t.Errorf("provider status = %+v; want failed with its error", st)
		}
		if _, ok := Lookup(h, testKey); ok {
			t.Error("the failed provider's service is visible")
		}
	})
}

func TestApplyFailureRollsBack(t *testing.T) {
	for _, plugin := range []string{"test-fail", "test-panic"} {
		t.Run(plugin, func(t *testing.T) {
			h := newHost(t, nil)
			apply(t, h, "plugins:\n  - {id: x, name: "+plugin+"}\n  - {id: ok, name: test-noop}\n")
			if diff := cmp.Diff(sorted([]string{"rollback x", "apply ok hello"}), sorted(rec.take())); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			st := Find(h.Status(), "x")
			if st.State != StateFailed || st.Err == "" {
				t.Errorf("status = %+v; want failed with the error", st)
			}
			if st := Find(h.Status(), "ok"); st.State != StateActive {
				t.Errorf("sibling status = %+v; want active", st)
			}
			testEvent.Emit("after")
			if got, _ := testWaterfall.Run(context.Background(), "v", nil); got != "v" {
				t.Errorf("waterfall = %q: a failed apply left its handler", got)
			}
			if got := rec.take(); len(got) != 0 {
				t.Errorf("events %q: a failed apply left its event handler", got)
			}
		})
	}
}

func TestInvalidCompositionChangesNothing(t *testing.T) {
	const good = `
plugins:
  - id: a
    name: test-noop
    config:
      greeting: a1
`
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want []string // substrings of the error
	}{
		{
			name: "bad yaml",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config: x: y\n",
			want: []string{"test.yml:4:", "invalid YAML", "mapping values"},
		},
		{
			name: "unknown key",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config:\n      greeting: a2\n      greetng: typo\n",
			want: []string{"test.yml:6:", `entry "a"`, "greetng", "unknown key; did you mean greeting?", "known keys: greeting"},
		},
		{
			name: "unknown nested key",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config:\n      nested:\n        level: 2\n        levle: 3\n",
			want: []string{"test.yml:7:", `entry "a"`, "nested.levle"},
		},
		{
			name: "unknown key in a list item",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config:\n      items:\n        - name: x\n        - nme: y\n",
			want: []string{"test.yml:7:", `entry "a"`, "items[1].nme"},
		},
		{
			name: "wrong type",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config:\n      nested:\n        level: high\n",
			want: []string{"test.yml:6:", `entry "a"`, "nested.level", "cannot unmarshal"},
		},
		{
			name: "unknown plugin",
			yaml: "plugins:\n  - id: a\n    name: test-nope\n",
			want: []string{"test.yml:2:", `entry "a"`, `unknown plugin "test-nope"`, "test-noop"},
		},
		{
			name: "unset env var",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config:\n      greeting: ${TEST_GREETING}\n",
			want: []string{"test.yml:5:", `entry "a"`, "greeting", "TEST_GREETING is not set"},
		},
		{
			name: "duplicate id",
			yaml: "plugins:\n  - {id: a, name: test-noop}\n  - {id: a, name: test-noop}\n",
			want: []string{"test.yml:3:", `entry "a"`, "duplicate id", "line 2"},
		},
		{
			name: "validate fails",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config:\n      greeting: invalid\n",
			want: []string{"test.yml:2:", `entry "a"`, "greeting: must not be"},
		},
		{
			name: "unknown entry key",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    disable: true\n",
			want: []string{"test.yml:4:", `entry "a"`, `unknown key "disable"`},
		},
		{
			name: "entry key twice",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    name: test-optional\n",
			want: []string{"test.yml:4:", `entry "a"`, `key "name" appears twice`},
		},
		{
			name: "config key twice",
			yaml: "plugins:\n  - id: a\n    name: test-noop\n    config:\n      greeting: x\n      greeting: y\n",
			want: []string{"test.yml:", `entry "a"`, "greeting", "already defined"},
		},
		{
			name: "unknown top-level key",
			yaml: "plugin:\n  - id: a\n",
			want: []string{"test.yml", `"plugin"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHost(t, nil)
			apply(t, h, good)
			rec.take()
			before := scopes(h)
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			c, err := ParseComposition("test.yml", []byte(tt.yaml), lookup)
			if err == nil {
				err = h.Update(context.Background(), c)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if got := rec.take(); len(got) != 0 {
				t.Errorf("instances were touched: %q", got)
			}
			if diff := cmp.Diff(before, scopes(h), sameScope); diff != "" {
				t.Errorf("running set changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	c, err := ParseComposition("f.yml", []byte(`
plugins:
  - id: a
    name: test-noop
    config: {bogus: 1}
  - id: b
    name: test-missing
  - id: c
    name: test-noop
    config: {greeting: [not, a, string]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = Check(c)
	if err == nil {
		t.Fatal("Check passed an invalid composition")
	}
	for _, w := range []string{`f.yml:5: entry "a": config key bogus`, `f.yml:6: entry "b": unknown plugin`, `f.yml:10: entry "c": config key greeting`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// TestCheckFileReportsEveryProblem mixes problems found while parsing (an
// unset variable, a duplicate id) with problems of entries that parsed (an
// unknown plugin, an unknown config key): each is reported, at its line.
func TestCheckFileReportsEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yml")
	writeFile(t, path, `plugins:
  - id: a
    name: test-noop
    config:
      greeting: ${TEST_CHECK_UNSET}
  - id: b
    name: test-missing
  - id: c
    name: test-noop
    config: {bogus: 1}
  - id: c
    name: test-noop
  - id: d
    name: test-noop
`)
	c, err := checkFile(path, func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("CheckFile passed an invalid composition")
	}
	for _, w := range []string{
		path + `:5: entry "a": config key greeting: environment variable TEST_CHECK_UNSET is not set`,
		path + `:6: entry "b": unknown plugin "test-missing"`,
		path + `:10: entry "c": config key bogus: unknown key`,
		path + `:11: entry "c": duplicate id (first at line 8)`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	var ids []string
	for _, e := range c.Entries {
		ids = append(ids, e.ID)
	}
	if diff := cmp.Diff([]string{"b", "c", "d"}, ids); diff != "" {
		t.Errorf("entries that parsed (-want +got):\n%s", diff)
	}

	writeFile(t, path, "plugins:\n  - {id: a, name: test-noop}\n")
	if c, err := checkFile(path, nil); err != nil || len(c.Entries) != 1 {
		t.Errorf("CheckFile of a valid file = %+v, %v", c, err)
	}
	if _, err := checkFile(filepath.Join(t.TempDir(), "none.yml"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckFile of a missing file = %v; want fs.ErrNotExist", err)
	}
}

func TestEnvExpansion(t *testing.T) {
	env := map[string]string{"NAME": "world", "EMPTY": "", "PORT": "8080"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want string
		err      string
	}{
		{in: "hello ${NAME}", want: "hello world"},
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${EMPTY}", want: ""},
		{in: "a$${NAME}b", want: "a${NAME}b"},
		{in: "${NAME}${NAME}", want: "worldworld"},
		{in: "Bearer ${MISSING:-}", want: "Bearer "},
		{in: "${MISSING}", err: "MISSING is not set"},
		{in: "${NAME", err: "unterminated"},
		{in: "${1X}", err: "invalid variable reference"},
	}
	for _, tt := range tests {
		got, err := expandEnv(tt.in, lookup)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("expandEnv(%q) error = %v; want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}

	c, err := ParseComposition("f.yml", []byte("plugins:\n  - id: a\n    name: test-noop\n    config:\n      port: ${PORT}\n      quoted: \"${PORT}\"\n      list: [\"${NAME}\"]\n"), lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"port": 8080, "quoted": "8080", "list": []any{"world"}}
	if diff := cmp.Diff(want, c.Entries[0].Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestParseComposition(t *testing.T) {
	c, err := ParseComposition("f.yml", []byte(`
plugins:
  - id: github
    name: test-noop
    config:
      greeting: hi
  - id: web
    name: test-noop
    disabled: true
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Composition{File: "f.yml", Entries: []Entry{
		{ID: "github", Name: "test-noop", Config: map[string]any{"greeting": "hi"}, File: "f.yml", Line: 3},
		{ID: "web", Name: "test-noop", Disabled: true, File: "f.yml", Line: 7},
	}}
	if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(Entry{})); diff != "" {
		t.Errorf("composition (-want +got):\n%s", diff)
	}
	if line := c.Entries[0].keyLine("greeting"); line != 6 {
		t.Errorf("line of config key greeting = %d, want 6", line)
	}
	for _, empty := range []string{"plugins:\n", "plugins: []\n"} {
		c, err := ParseComposition("f.yml", []byte(empty), nil)
		if err != nil || len(c.Entries) != 0 {
			t.Errorf("ParseComposition(%q) = %+v, %v; want no entries", empty, c, err)
		}
	}
	// A file without the key is what a watcher reads mid-save: an error, not
	// a composition without instances.
	for _, blank := range []string{"", "# nothing yet\n"} {
		if _, err := ParseComposition("f.yml", []byte(blank), nil); err == nil || !strings.Contains(err.Error(), "plugins: []") {
			t.Errorf("ParseComposition(%q) = %v; want an error saying how to write an empty composition", blank, err)
		}
	}
}

func TestServiceCycleAndConflicts(t *testing.T) {
	err := Check(parse(t, "plugins:\n  - {id: a, name: test-cycle-a}\n  - {id: b, name: test-cycle-b}\n"))
	if err == nil || !strings.Contains(err.Error(), "service cycle a -> b -> a") {
		t.Errorf("Check = %v; want a cycle error", err)
	}
	// Disabling one side breaks the cycle.
	if err := Check(parse(t, "plugins:\n  - {id: a, name: test-cycle-a}\n  - {id: b, name: test-cycle-b, disabled: true}\n")); err != nil {
		t.Errorf("Check with the cycle disabled = %v", err)
	}
	err = Check(parse(t, "plugins:\n  - {id: p1, name: test-provider}\n  - {id: p2, name: test-provider}\n"))
	if err == nil || !strings.Contains(err.Error(), `entry "p2"`) || !strings.Contains(err.Error(), `"test-greeting"`) {
		t.Errorf("Check = %v; want a two-providers error", err)
	}
}

func TestShutdownBoundedWithStuckPlugin(t *testing.T) {
	gate := make(chan struct{})
	stuckGate.Store(&gate)
	defer stuckGate.Store(nil)
	// Released after the host is gone, so the abandoned disposer ends
	// before goleak looks.
	defer close(gate)

	h := New(&Options{Logger: testLogger(t), DisposeTimeout: 50 * time.Millisecond})
	rec.take()
	if err := h.Update(context.Background(), parse(t, "plugins:\n  - {id: s, name: test-stuck}\n  - {id: n, name: test-noop}\n")); err != nil {
		t.Fatal(err)
	}
	err := h.Shutdown(context.Background())
	if !errors.Is(err, ErrDisposeTimeout) || !strings.Contains(err.Error(), `"stuck"`) {
		t.Errorf("Shutdown = %v; want a dispose timeout naming the stuck disposer", err)
	}
	// n is disposed first, under the same short timeout: on a loaded
	// machine its idle goroutine may not end in time and its dispose goes
	// on abandoned, so its last disposer is waited for, not looked up.
	waitEvents(t, "dispose n")
	rec.take()
	if err := h.Update(context.Background(), parse(t, "plugins: []\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Shutdown = %v; want ErrClosed", err)
	}
}

func TestShutdownDependentsFirst(t *testing.T) {
	h := New(&Options{Logger: testLogger(t)})
	rec.take()
	apply(t, h, "plugins:\n  - {id: p, name: test-provider, config: {greeting: x}}\n  - {id: n, name: test-noop}\n  - {id: c, name: test-consumer}\n")
	rec.take()
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	if slices.Index(got, "dispose c") > slices.Index(got, "dispose p") {
		t.Errorf("events %q: the provider went before its dependent", got)
	}
	if len(h.Status()) != 0 {
		t.Errorf("status after shutdown = %+v; want empty", h.Status())
	}
}

func TestOnStatusAndWaitStatus(t *testing.T) {
	h := newHost(t, nil)
	var seen []string
	remove := h.OnStatus(func(st InstanceStatus) {
		if st.ID == "x" {
			seen = append(seen, string(st.State))
		}
	})
	defer remove()
	apply(t, h, "plugins:\n  - {id: x, name: test-fail}\n")
	if diff := cmp.Diff([]string{"pending", "starting", "failed"}, seen); diff != "" {
		t.Errorf("status changes (-want +got):\n%s", diff)
	}
	err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "x").State == StateFailed })
	if err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = h.WaitStatus(ctx, func(st []InstanceStatus) bool { return false })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "x=failed") {
		t.Errorf("WaitStatus = %v; want canceled with the status", err)
	}
}

func TestNewScopeServices(t *testing.T) {
	s := NewScope(context.Background(), "t", testLogger(t))
	if err := Provide(s, testKey, &greeter{"local"}); err != nil {
		t.Fatal(err)
	}
	if g := Get(s, testKey); g.greeting != "local" {
		t.Errorf("Get = %q", g.greeting)
	}
	if err := s.Dispose(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := Lookup(s, testKey); ok {
		t.Error("service survived its scope")
	}
}

func TestPlugins(t *testing.T) {
	var info PluginInfo
	for _, p := range Plugins() {
		if p.Name == "test-noop" {
			info = p
		}
	}
	want := []ConfigField{
		{Key: "greeting", Type: "string", Default: "hello"},
		{Key: "tags", Type: "[]string"},
		{Key: "nested.level", Type: "int"},
		{Key: "nested.wait", Type: "time.Duration"},
		{Key: "items[].name", Type: "string"},
	}
	if diff := cmp.Diff(want, info.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

// TestPluginsConfigHoldingItself: a config type that holds itself lists
// its keys once instead of recursing forever.
func TestPluginsConfigHoldingItself(t *testing.T) {
	var info PluginInfo
	for _, p := range Plugins() {
		if p.Name == "test-tree" {
			info = p
		}
	}
	want := []ConfigField{
		{Key: "name", Type: "string"},
		{Key: "children", Type: "[]host.treeConfig"},
		{Key: "parent", Type: "*host.treeConfig"},
	}
	if diff := cmp.Diff(want, info.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestLateProvideStartsDependents(t *testing.T) {
	gate := make(chan struct{})
	lateGate.Store(&gate)
	defer lateGate.Store(nil)
	h := newHost(t, nil)
	apply(t, h, "plugins:\n  - {id: p, name: test-late-provider}\n  - {id: c, name: test-consumer}\n")
	if st := Find(h.Status(), "c"); st.State != StatePending || !strings.Contains(st.Err, `instance "p" is active but did not provide it`) {
		t.Fatalf("consumer = %+v; want pending on the active provider", st)
	}
	close(gate)
	err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "c").State == StateActive })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"apply c late"}, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestIndependentInstancesStartInParallel(t *testing.T) {
	gate := make(chan struct{})
	applyGate.Store(&gate)
	defer applyGate.Store(nil)
	h := newHost(t, nil)
	done := make(chan error, 1)
	go func() {
		done <- h.Update(context.Background(), parse(t, "plugins:\n  - {id: s1, name: test-slow}\n  - {id: s2, name: test-slow}\n"))
	}()
	// Both applies are running at once: neither waits for the other.
	err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool {
		return Find(st, "s1").State == StateStarting && Find(st, "s2").State == StateStarting
	})
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]State{"s1": StateActive, "s2": StateActive}, states(h)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

func TestApplyContextEndsWhileStarting(t *testing.T) {
	gate := make(chan struct{})
	applyGate.Store(&gate)
	defer applyGate.Store(nil)
	h := newHost(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Update(ctx, parse(t, "plugins:\n  - {id: s, name: test-slow}\n")) }()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "s").State == StateStarting }); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply = %v; want context.Canceled", err)
	}
	close(gate)
	// The start goes on in the background and settles.
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "s").State == StateActive }); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownCancelsStartingInstances: a shutdown during a slow start
// cancels the starting instance's context, so its Apply gives up, and the
// shutdown is prompt and clean.
func TestShutdownCancelsStartingInstances(t *testing.T) {
	gate := make(chan struct{})
	applyGate.Store(&gate)
	defer applyGate.Store(nil)
	defer close(gate) // never closed before: only the cancel ends the Apply
	h := New(&Options{Logger: testLogger(t)})
	rec.take()
	done := make(chan error, 1)
	go func() {
		done <- h.Update(context.Background(), parse(t, "plugins:\n  - {id: s, name: test-slow}\n  - {id: n, name: test-noop}\n"))
	}()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "s").State == StateStarting }); err != nil {
		t.Fatal(err)
	}
	if err := h.Shutdown(waitCtx(t)); err != nil {
		t.Errorf("Shutdown = %v; want a clean shutdown", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	if slices.Contains(got, "apply s") || !slices.Contains(got, "dispose n") {
		t.Errorf("events %q: want s's Apply cancelled and n disposed", got)
	}
	if st := h.Status(); len(st) != 0 {
		t.Errorf("status after shutdown = %+v; want empty", st)
	}
}

// TestShutdownDuringSlowApply: an Apply that ignores its context holds the
// shutdown up until ctx ends; Shutdown then gives up, and what the apply
// started is disposed once it returns.
func TestShutdownDuringSlowApply(t *testing.T) {
	gate := make(chan struct{})
	applyGate.Store(&gate)
	defer applyGate.Store(nil)
	h := New(&Options{Logger: testLogger(t)})
	rec.take()
	done := make(chan error, 1)
	go func() {
		done <- h.Update(context.Background(), parse(t, "plugins:\n  - {id: s, name: test-deaf}\n  - {id: n, name: test-noop}\n"))
	}()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "s").State == StateStarting }); err != nil {
		close(gate)
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v; want it to give up at its deadline", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return len(st) == 0 }); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); !slices.Contains(got, "apply n hello") || !slices.Contains(got, "dispose n") {
		t.Errorf("events %q: an instance started before shutdown was not disposed", got)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown = %v", err)
	}
}

func TestRegisterPanicsOnProgrammerErrors(t *testing.T) {
	apply := func(*Scope, struct{}) error { return nil }
	tests := []struct {
		name string
		def  Definition[struct{}]
		want string
	}{
		{"bad name", Definition[struct{}]{Name: "Bad Name", Apply: apply}, "must match"},
		{"no apply", Definition[struct{}]{Name: "test-no-apply"}, "has no Apply"},
		{"duplicate", Definition[struct{}]{Name: "test-noop", Apply: apply}, "registered twice"},
		{"injects twice", Definition[struct{}]{Name: "test-inject-twice", Inject: []Dep{Require(testKey), Optional(testKey)}, Apply: apply}, "injects service \"test-greeting\" twice"},
		{"injects what it provides", Definition[struct{}]{Name: "test-self", Inject: []Dep{Require(testKey)}, Provides: []AnyKey{testKey}, Apply: apply}, "both injects and provides"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tt.want) {
					t.Errorf("panic %v; want one containing %q", r, tt.want)
				}
			}()
			Register(tt.def)
		})
	}
}

// checkFile is what `dsh-host check` does: read the composition and, with
// what parsed, check the entries too, for every problem of the file.
func checkFile(path string, lookupEnv func(string) (string, bool)) (*Composition, error) {
	c, err := ReadComposition(path, lookupEnv)
	if c != nil {
		err = errors.Join(err, Check(c))
	}
	return c, err
}
