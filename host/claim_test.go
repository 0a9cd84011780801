package host

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestClaimsChecked: two enabled entries that claim one name are a config
// error at the later one's key, naming the first entry and its line, in
// one file or across included files; a disabled entry claims nothing.
func TestClaimsChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		main  string
		files map[string]string
		want  []string // substrings of the error, DIR for the directory; none: valid
	}{
		{
			name: "one file",
			main: "plugins:\n  - id: a\n    name: test-claimer\n    config:\n      serverName: gh\n  - id: b\n    name: test-claimer\n    config:\n      serverName: gh\n",
			want: []string{
				`DIR/composition.yml:9: entry "b": config key serverName: serverName "gh" is already claimed by entry "a" (DIR/composition.yml:5)`,
				`DIR/composition.yml:6: entry "b": tool "claimer_tool" is already claimed by entry "a" (DIR/composition.yml:2)`,
			},
		},
		{
			name:  "two files",
			main:  "include: [more.yml]\nplugins:\n  - {id: a, name: test-claimer, config: {serverName: gh}}\n",
			files: map[string]string{"more.yml": "plugins:\n  - id: b\n    name: test-claimer\n    config: {serverName: gh}\n"},
			want:  []string{`DIR/more.yml:4: entry "b": config key serverName: serverName "gh" is already claimed by entry "a" (DIR/composition.yml:3)`},
		},
		{
			name: "one of them disabled",
			main: "plugins:\n  - {id: a, name: test-claimer, config: {serverName: gh}}\n  - {id: b, name: test-claimer, disabled: true, config: {serverName: gh}}\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				writeFile(t, filepath.Join(dir, name), data)
			}
			main := filepath.Join(dir, "composition.yml")
			writeFile(t, main, tc.main)
			_, err := checkFile(main, nil)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestClaimsHeldWhileRunning: a running instance holds its claims on its
// scope, last to go; the name is free again once it is disposed, so an
// entry renamed in one edit starts with it.
func TestClaimsHeldWhileRunning(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, "plugins:\n  - {id: a, name: test-claimer, config: {serverName: gh}}\n")
	if diff := cmp.Diff([]string{"claim serverName gh", "claim tool claimer_tool"}, scopes(h)["a"].Effects()); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
	apply(t, h, "plugins:\n  - {id: b, name: test-claimer, config: {serverName: gh}}\n")
	if diff := cmp.Diff(map[string]State{"b": StateActive}, states(h)); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}

	// A run whose dispose has not finished still holds its names.
	other := NewScope(context.Background(), "other", nil)
	defer other.Dispose(0)
	err := h.hold(other, []Claim{{Kind: "serverName", Value: "gh"}})
	if err == nil || !strings.Contains(err.Error(), `serverName "gh" is still held by instance "b"`) {
		t.Errorf("hold of a held name = %v", err)
	}
}

// TestOptionsEntries: the host runs the entries its options add, unless
// the composition lists the id, whose entry then wins.
func TestOptionsEntries(t *testing.T) {
	extra := Entry{ID: "extra", Name: "test-noop", File: "(command line)", Config: map[string]any{"greeting": "from options"}}
	h := newHost(t, &Options{Entries: []Entry{extra}})
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n")
	if diff := cmp.Diff([]string{"apply a hello", "apply extra from options"}, sorted(rec.take())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n  - {id: extra, name: test-noop, config: {greeting: from file}}\n")
	if diff := cmp.Diff([]string{"dispose extra", "apply extra from file"}, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestOptionsEntriesIDs: an entry of the options with a built-in's id
// configures that built-in (one instance, not two); two with one id are
// an error.
func TestOptionsEntriesIDs(t *testing.T) {
	builtin := Entry{ID: "test-builtin", Name: "test-builtin", File: "(command line)", Config: map[string]any{"greeting": "from options"}}
	h := newHost(t, &Options{Entries: []Entry{builtin}})
	apply(t, h, "plugins: []\n")
	var details []string
	for _, st := range h.Status() {
		details = append(details, st.ID+": "+st.Detail)
	}
	if diff := cmp.Diff([]string{"test-builtin: greets with from options"}, details); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}

	twice := Entry{ID: "x", Name: "test-noop", File: "(command line)"}
	h = newHost(t, &Options{Entries: []Entry{twice, twice}})
	err := h.Update(context.Background(), parse(t, "plugins: []\n"))
	if err == nil || !strings.Contains(err.Error(), `(command line): entry "x": duplicate id`) {
		t.Errorf("two entries with one id: %v", err)
	}
}

// TestClaimsReleased: an instance whose Apply fails holds no name after;
// one whose dispose timed out holds its names until the abandoned
// disposers end (its replacement fails and says why), then frees them.
func TestClaimsReleased(t *testing.T) {
	gate := make(chan struct{})
	stuckGate.Store(&gate)
	defer stuckGate.Store(nil)
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()
	h := newHost(t, &Options{DisposeTimeout: 20 * time.Millisecond, Logger: testLogger(t)})
	other := NewScope(context.Background(), "other", nil)
	defer other.Dispose(0)
	gh := []Claim{{Kind: "serverName", Value: "gh"}}

	apply(t, h, "plugins:\n  - {id: a, name: test-claimer, config: {serverName: gh, fail: true}}\n")
	if st := Find(h.Status(), "a"); st.State != StateFailed {
		t.Fatalf("a = %+v; want failed", st)
	}
	if err := h.hold(other, gh); err != nil {
		t.Errorf("after a failed apply: %v", err)
	}
	other.Dispose(0)

	apply(t, h, "plugins:\n  - {id: a, name: test-claimer, config: {serverName: gh, stuck: true}}\n")
	apply(t, h, "plugins:\n  - {id: b, name: test-claimer, config: {serverName: gh}}\n")
	if st := Find(h.Status(), "b"); st.State != StateFailed || !strings.Contains(st.Err, `serverName "gh" is still held by instance "a"`) {
		t.Errorf("b = %+v; want failed on the name a still holds", st)
	}
	close(gate)
	released = true
	other = NewScope(context.Background(), "other", nil)
	defer other.Dispose(0)
	// The abandoned disposers end on their own, with no event to wait on.
	deadline := time.Now().Add(10 * time.Second)
	for h.hold(other, gh) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the name stayed held after the stuck disposer ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCheckPluginPanics: a plugin's Validate or Claims that panics is an
// error of its entry, not a crash of the host checking a composition.
func TestCheckPluginPanics(t *testing.T) {
	for config, want := range map[string]string{
		"{inValidate: true}": `test.yml:2: entry "p": invalid config: Validate panicked: validate boom`,
		"{inClaims: true}":   `test.yml:2: entry "p": plugin test-panicky: Claims panicked: claims boom`,
	} {
		err := Check(parse(t, "plugins:\n  - {id: p, name: test-panicky, config: "+config+"}\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Check = %v; want %s", config, err, want)
		}
	}
}

// TestCheckReportsEverything: a claim clash is reported beside another
// entry's config error, and an entry that takes a built-in's id for
// another plugin is an error (the built-in would not run).
func TestCheckReportsEverything(t *testing.T) {
	c := parse(t, `plugins:
  - {id: a, name: test-claimer, config: {serverName: gh}}
  - {id: b, name: test-claimer, config: {serverName: gh}}
  - {id: c, name: test-noop, config: {bogus: 1}}
  - {id: test-builtin, name: test-noop}
`)
	err := Check(c)
	for _, want := range []string{
		`test.yml:3: entry "b": config key serverName: serverName "gh" is already claimed by entry "a"`,
		`test.yml:4: entry "c": config key bogus: unknown key`,
		`test.yml:5: entry "test-builtin": the id is the built-in test-builtin service's`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v; want it to contain %q", err, want)
		}
	}
	// The built-in's own plugin under its id configures it.
	if err := Check(parse(t, "plugins:\n  - {id: test-builtin, name: test-builtin}\n")); err != nil {
		t.Errorf("configuring the built-in: %v", err)
	}
}
