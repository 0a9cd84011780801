package settings

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDanglingSymlinkIsWrittenThrough: a settings file linked into a
// dotfiles directory before the file exists there is created at the
// link's target; the link stays a link, and a watch follows the target.
func TestDanglingSymlinkIsWrittenThrough(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "dotfiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "home", "settings.yaml")
	target := filepath.Join(root, "dotfiles", "dsh.yaml")
	// Relative, as dotfiles managers make them.
	st, ch := openLinked(t, "../dotfiles/dsh.yaml", link)
	if err := Update(st, "ui", func(u *ui) error { u.Theme = "dark"; return nil }); err != nil {
		t.Fatal(err)
	}
	stillLink(t, link)
	if b, err := os.ReadFile(target); err != nil || string(b) != "ui:\n  theme: dark\n" {
		t.Fatalf("target holds %q (%v)", b, err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Errorf("new target mode %v, want 0600", fi.Mode().Perm())
	}
	if ev := next(t, ch); ev.err != nil || ev.v.Theme != "dark" {
		t.Fatalf("watch after the write: %+v", ev)
	}
	// The target, created after Watch began, is followed.
	if err := os.WriteFile(target, []byte("ui:\n  theme: blue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ev := nextAfterWrite(t, ch); ev.err != nil || ev.v.Theme != "blue" {
		t.Fatalf("watch after an edit of the target: %+v", ev)
	}
}

// TestDanglingSymlinkWithoutDirectoryIsRefused: a link into a directory
// that does not exist is refused with a message naming both, and nothing
// is created or replaced.
func TestDanglingSymlinkWithoutDirectoryIsRefused(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "settings.yaml")
	target := filepath.Join(root, "gone", "dsh.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	st, err := Open(link, discard)
	if err != nil {
		t.Fatal(err)
	}
	err = Update(st, "ui", func(u *ui) error { u.Theme = "dark"; return nil })
	if err == nil {
		t.Fatal("Update through a link into a missing directory succeeded")
	}
	for _, want := range []string{link + " is a symlink to " + target, "create the directory or fix the link"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Dir(target)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the target's directory was created: %v", err)
	}
}

// TestSymlinkLoopIsRefused: a loop of links is an error, not a hang, and
// the links stay.
func TestSymlinkLoopIsRefused(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	st, err := Open(a, discard)
	if err != nil {
		t.Fatal(err)
	}
	// Made after Open, which would refuse them already.
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	if err := Update(st, "ui", func(u *ui) error { u.Theme = "x"; return nil }); err == nil {
		t.Fatal("Update through a loop of links succeeded")
	}
	for _, p := range []string{a, b} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s was replaced: %v %v", p, fi.Mode(), err)
		}
	}
}

// TestDirectoryIsNamedAsSuch: a directory where the settings file should
// be is named a directory by Open, and by Read, Update and a watch when it
// appears later; it is left as it is.
func TestDirectoryIsNamedAsSuch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	want := path + " is a directory, not a settings file"
	if _, err := Open(path, discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v, want %q", err, want)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	st, err := Open(path, discard)
	if err != nil {
		t.Fatal(err)
	}
	st.debounce = 10 * time.Millisecond
	ch, remove := watchUI(t, st, testScope(t))
	defer remove()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch); ev.err == nil || !strings.Contains(ev.err.Error(), want) {
		t.Errorf("watch = %+v, want %q", ev, want)
	}
	if _, _, err := Read[ui](st, "ui"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read = %v, want %q", err, want)
	}
	if err := Update(st, "ui", func(u *ui) error { u.Theme = "x"; return nil }); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Update = %v, want %q", err, want)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
		t.Errorf("the directory was replaced: %v", err)
	}
}
