package settings

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

func TestMain(m *testing.M) {
	leaks.VerifyTestMain(m)
}

type event struct {
	v   ui
	err error
}

// watchUI watches the ui section, reporting each call on the returned
// channel.
func watchUI(t *testing.T, st *Store, s *host.Scope) (<-chan event, func()) {
	t.Helper()
	ch := make(chan event, 16)
	remove := Watch(st, s, "ui", func(v ui, err error) { ch <- event{v, err} })
	return ch, remove
}

// testScope returns a scope disposed when the test ends.
func testScope(t *testing.T) *host.Scope {
	s := host.NewScope(context.Background(), "test", slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if err := s.Dispose(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return s
}

func next(t *testing.T, ch <-chan event) event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch call within 10s")
		return event{}
	}
}

// nextAfterWrite is next for a write in place: os.WriteFile truncates before
// it writes, and a read in between sees an empty file, a real state the
// watcher may report under load. Such a call (the zero value, no error) is
// skipped; use it only where the expected call is not the zero value.
func nextAfterWrite(t *testing.T, ch <-chan event) event {
	t.Helper()
	for {
		if ev := next(t, ch); ev.err != nil || ev.v != (ui{}) {
			return ev
		}
	}
}

func write(t *testing.T, st *Store, content string) {
	t.Helper()
	if err := os.WriteFile(st.Path(), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// saveByRename replaces the file the way many editors do.
func saveByRename(t *testing.T, st *Store, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(st.Path()), "settings.yaml~")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, st.Path()); err != nil {
		t.Fatal(err)
	}
}

func TestWatchSeesHandEdits(t *testing.T) {
	st := openAt(t, "ui:\n  theme: dark\nother: 1\n")
	ch, remove := watchUI(t, st, testScope(t))
	defer remove()

	write(t, st, "ui:\n  theme: light\nother: 1\n")
	if ev := nextAfterWrite(t, ch); ev.err != nil || ev.v.Theme != "light" {
		t.Fatalf("after a write: %+v", ev)
	}
	// A change elsewhere, or to comments only, is not the section's change;
	// the next call is for the edit after it.
	saveByRename(t, st, "ui:\n  theme: light # comment\nother: 2\n")
	saveByRename(t, st, "ui:\n  theme: blue\nother: 2\n")
	if ev := next(t, ch); ev.err != nil || ev.v.Theme != "blue" {
		t.Fatalf("after a save by rename: %+v", ev)
	}
	// Update is seen like any other writer.
	if err := Update(st, "ui", func(u *ui) error { u.Width = 9; return nil }); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.err != nil || ev.v != (ui{Theme: "blue", Width: 9}) {
		t.Fatalf("after Update: %+v", ev)
	}
	// Removing the file empties the section.
	if err := os.Remove(st.Path()); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.err != nil || ev.v != (ui{}) {
		t.Fatalf("after removal: %+v", ev)
	}
}

func TestWatchBadEditKeepsLastGood(t *testing.T) {
	// Saves by rename: a write in place passes through an empty file, which
	// is a good version (no section) and would become the last good value.
	st := openAt(t, "ui:\n  theme: dark\n")
	ch, remove := watchUI(t, st, testScope(t))
	defer remove()

	saveByRename(t, st, "ui:\n  theme: dark\n bad: indentation\n")
	ev := next(t, ch)
	var pe *ParseError
	if !errors.As(ev.err, &pe) || pe.Line != 3 || ev.v.Theme != "dark" {
		t.Fatalf("bad edit: %+v, want the last good value and a ParseError on line 3", ev)
	}
	// The same bad version again is not reported twice; the next call is
	// for the next, different bad version.
	saveByRename(t, st, "ui:\n  theme: dark\n bad: indentation\n")
	saveByRename(t, st, "ui:\n  theme: [unclosed\n")
	ev = next(t, ch)
	if !errors.As(ev.err, &pe) || pe.Line == 3 || ev.v.Theme != "dark" {
		t.Fatalf("second bad edit: %+v", ev)
	}
	// A section that parses but does not fit the type is a bad edit too.
	saveByRename(t, st, "ui:\n  theme: [a, b]\n")
	if ev = next(t, ch); ev.err == nil || ev.v.Theme != "dark" {
		t.Fatalf("ill-typed edit: %+v", ev)
	}
	// Fixed: reported even though the value equals the last good one, so
	// that the consumer can clear its error.
	saveByRename(t, st, "ui:\n  theme: dark\n")
	if ev = next(t, ch); ev.err != nil || ev.v.Theme != "dark" {
		t.Fatalf("after the fix: %+v", ev)
	}
}

func TestWatchEndsWithScope(t *testing.T) {
	st := openAt(t, "ui:\n  theme: dark\n")
	s := host.NewScope(context.Background(), "test", slog.New(slog.DiscardHandler))
	ch, _ := watchUI(t, st, s)
	ch2, _ := watchUI(t, st, s) // two watches share one directory watcher
	_, early := watchUI(t, st, s)
	early() // removed before dispose: it leaves nothing on the scope
	if got := s.Effects(); len(got) != 2 {
		t.Errorf("scope effects = %q, want the two live watches", got)
	}
	write(t, st, "ui:\n  theme: light\n")
	if nextAfterWrite(t, ch).v.Theme != "light" || nextAfterWrite(t, ch2).v.Theme != "light" {
		t.Fatal("watch did not see the edit")
	}
	if err := s.Dispose(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	st.watchMu.Lock()
	h := st.hub
	st.watchMu.Unlock()
	if h != nil {
		t.Error("the directory watcher outlived its last watch")
	}
	// goleak in TestMain checks that no goroutine is left.
}

func TestWatchStartsOnAMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "settings.yaml")
	st, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	st.debounce = 10 * time.Millisecond
	ch, remove := watchUI(t, st, testScope(t))
	defer remove()
	if err := Update(st, "ui", func(u *ui) error { u.Theme = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.err != nil || ev.v.Theme != "x" {
		t.Fatalf("%+v", ev)
	}
}

func TestWatchInvalidSectionPanics(t *testing.T) {
	st := openAt(t, "")
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	Watch(st, testScope(t), "Not Valid", func(ui, error) {})
}

func TestWatchNilScopePanics(t *testing.T) {
	st := openAt(t, "")
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "*host.Scope") {
			t.Errorf("panic = %q, want one that names the missing scope", msg)
		}
		st.watchMu.Lock()
		defer st.watchMu.Unlock()
		if st.hub != nil {
			t.Error("a watch without a scope started watching the file")
		}
	}()
	Watch(st, nil, "ui", func(ui, error) {})
}

// openLinked makes link a symlink to target (as written: relative or
// absolute), opens the store at link and watches its "ui" section until
// the test ends.
func openLinked(t *testing.T, target, link string) (*Store, <-chan event) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	st, err := Open(link, discard)
	if err != nil {
		t.Fatal(err)
	}
	st.debounce = 10 * time.Millisecond
	ch, remove := watchUI(t, st, testScope(t))
	t.Cleanup(remove)
	return st, ch
}

// stillLink fails the test unless link is still a symlink: a write goes
// through it, never replaces it.
func stillLink(t *testing.T, link string) {
	t.Helper()
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a regular file: %v %v", fi.Mode(), err)
	}
}

func TestSymlinkedFile(t *testing.T) {
	dotfiles := t.TempDir()
	target := filepath.Join(dotfiles, "dsh-settings.yaml")
	if err := os.WriteFile(target, []byte("# mine\nui:\n  theme: dark\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "settings.yaml")
	st, ch := openLinked(t, target, link)
	if err := Update(st, "ui", func(u *ui) error { u.Theme = "light"; return nil }); err != nil {
		t.Fatal(err)
	}
	stillLink(t, link)
	if b, _ := os.ReadFile(target); string(b) != "# mine\nui:\n  theme: light\n" {
		t.Errorf("target holds %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("target mode %v, want 0644 kept", fi.Mode().Perm())
	}
	if ev := next(t, ch); ev.v.Theme != "light" {
		t.Fatalf("%+v", ev)
	}
	// An edit made in the dotfiles directory is seen.
	if err := os.WriteFile(target, []byte("ui:\n  theme: blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := nextAfterWrite(t, ch); ev.err != nil || ev.v.Theme != "blue" {
		t.Fatalf("%+v", ev)
	}
}
