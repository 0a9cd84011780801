package filewatch

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
)

// noSignal fails the test if w signals within d.
func noSignal(t *testing.T, w *Watcher, d time.Duration) {
	t.Helper()
	select {
	case <-w.C():
		t.Error("a signal, want none")
	case <-time.After(d):
	}
}

// TestChmodOption: a change of permissions alone signals with
// Options.Chmod only.
func TestChmodOption(t *testing.T) {
	for _, on := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "f.yaml")
		writeFile(t, path, "a")
		w, err := New([]string{path}, Options{Debounce: 10 * time.Millisecond, Chmod: on})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if on {
			wait(t, w)
		} else {
			noSignal(t, w, 200*time.Millisecond)
		}
		w.Close()
	}
	// The same, event by event.
	synctest.Test(t, func(t *testing.T) {
		w, events, _ := start(Options{Debounce: time.Second, Chmod: true})
		events <- fsnotify.Event{Name: file, Op: fsnotify.Chmod}
		time.Sleep(time.Hour)
		synctest.Wait()
		if !pending(w) {
			t.Error("chmod only with Options.Chmod: no signal")
		}
		close(events)
		<-w.done
	})
}

// TestOneDirectoryByTwoPaths: files of one directory given under two
// paths (through a linked directory, and directly, as a symlinked file's
// target is) each signal: fsnotify names the directory's events after one
// path only.
func TestOneDirectoryByTwoPaths(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(root, "alias")
	if err := os.Symlink(real, alias); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(alias, "a.yml"), filepath.Join(real, "b.yml")
	w, err := New([]string{a, b}, Options{Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, b, "x")
	wait(t, w)
	writeFile(t, a, "x")
	wait(t, w)
	// A file of the directory that was not asked for does not count. Asked
	// of counts, not by waiting for silence: a's create and write may come
	// in two debounce windows under load, and the second would be taken
	// for c's.
	if w.counts(filepath.Join(real, "c.yml")) || w.counts(filepath.Join(alias, "c.yml")) {
		t.Error("c.yml counts, want only a.yml and b.yml")
	}
}
