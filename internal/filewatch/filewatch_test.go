package filewatch

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

func TestMain(m *testing.M) {
	leaks.VerifyTestMain(m)
}

// wait fails the test unless w signals within 10s.
func wait(t *testing.T, w *Watcher) {
	t.Helper()
	select {
	case _, ok := <-w.C():
		if !ok {
			t.Fatal("C closed before a signal")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no signal within 10s")
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSaves makes each kind of save an editor does and waits for the signal.
func TestSaves(t *testing.T) {
	for _, tc := range []struct {
		name string
		save func(t *testing.T, path string)
	}{
		{"write in place", func(t *testing.T, path string) { writeFile(t, path, "b") }},
		{"rename over", func(t *testing.T, path string) {
			tmp := filepath.Join(filepath.Dir(path), ".f.tmp")
			writeFile(t, tmp, "b")
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete and create", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, "b")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.yaml")
			writeFile(t, path, "a")
			w, err := New([]string{path}, Options{Debounce: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			tc.save(t, path)
			wait(t, w)
		})
	}
}

// TestSecondPath watches two files in two directories, as for a symlink
// and its target: a change to either signals.
func TestSecondPath(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	w, err := New([]string{a, b}, Options{Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, b, "x")
	wait(t, w)
	writeFile(t, a, "x")
	wait(t, w)
}

// TestGlob watches a glob: a file created after New that it matches
// signals; one it does not match does not.
func TestGlob(t *testing.T) {
	dir := t.TempDir()
	w, err := New([]string{filepath.Join(dir, "*.yml")}, Options{Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Renamed into place: one event on a.yml. Written in place, its
	// create and its write could fall on either side of a debounce on a
	// stalled machine, and the second signal be taken for a.txt's.
	writeFile(t, filepath.Join(dir, "a.tmp"), "x")
	if err := os.Rename(filepath.Join(dir, "a.tmp"), filepath.Join(dir, "a.yml")); err != nil {
		t.Fatal(err)
	}
	wait(t, w)
	writeFile(t, filepath.Join(dir, "a.txt"), "x")
	select {
	case <-w.C():
		t.Error("a file the glob does not match signalled")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestBurstCoalesces writes the file many times within the debounce: one
// signal follows, and none is left once the watcher is closed.
func TestBurstCoalesces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	// The debounce is long next to the burst, so that a stalled test
	// machine does not split it.
	w, err := New([]string{path}, Options{Debounce: time.Second, MaxWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		writeFile(t, path, strings.Repeat("x", i))
	}
	wait(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range w.C() {
		n++
	}
	if n != 0 {
		t.Errorf("%d more signals after the burst's, want 0", n)
	}
}

// TestMaxWait rewrites the file without pause: with an hour-long debounce,
// only the maximum wait lets signals through, again and again.
func TestMaxWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	w, err := New([]string{path}, Options{Debounce: time.Hour, MaxWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stop, done := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-done }()
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wait(t, w)
	wait(t, w)
}

func TestNewErrors(t *testing.T) {
	for _, paths := range [][]string{nil, {filepath.Join(t.TempDir(), "missing", "f")}} {
		if w, err := New(paths, Options{}); err == nil {
			w.Close()
			t.Errorf("New(%q) succeeded", paths)
		}
	}
}

// The tests below feed events by hand in a synctest bubble, where time is
// virtual: what they assert on timing is exact.

const (
	file = "/d/f"
	glob = "/d/inc/*.yml"
)

// start runs a watcher of file on hand-fed channels; closing events stops
// it.
func start(opts Options) (w *Watcher, events chan fsnotify.Event, errs chan error) {
	w = newWatcher([]string{file, glob}, opts)
	w.add(file)
	w.add(glob)
	events, errs = make(chan fsnotify.Event), make(chan error)
	go w.run(events, errs)
	return w, events, errs
}

// pending reports whether a signal is waiting on w.C().
func pending(w *Watcher) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

func TestWhichEventsCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   fsnotify.Event
		want bool
	}{
		{"write", fsnotify.Event{Name: file, Op: fsnotify.Write}, true},
		{"create", fsnotify.Event{Name: file, Op: fsnotify.Create}, true},
		{"remove", fsnotify.Event{Name: file, Op: fsnotify.Remove}, true},
		{"rename", fsnotify.Event{Name: file, Op: fsnotify.Rename}, true},
		{"chmod and write", fsnotify.Event{Name: file, Op: fsnotify.Chmod | fsnotify.Write}, true},
		{"unclean name", fsnotify.Event{Name: "/d/./f", Op: fsnotify.Write}, true},
		{"chmod only", fsnotify.Event{Name: file, Op: fsnotify.Chmod}, false},
		{"another file", fsnotify.Event{Name: "/d/g", Op: fsnotify.Write}, false},
		{"the directory", fsnotify.Event{Name: "/d", Op: fsnotify.Write}, false},
		{"a file the glob matches", fsnotify.Event{Name: "/d/inc/a.yml", Op: fsnotify.Create}, true},
		{"a file the glob does not match", fsnotify.Event{Name: "/d/inc/a.yml~", Op: fsnotify.Create}, false},
		{"a file below the glob's directory", fsnotify.Event{Name: "/d/inc/x/a.yml", Op: fsnotify.Create}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, events, _ := start(Options{Debounce: time.Second})
				events <- tc.ev
				time.Sleep(time.Hour)
				synctest.Wait()
				if got := pending(w); got != tc.want {
					t.Errorf("signal: %v, want %v", got, tc.want)
				}
				close(events)
				<-w.done
			})
		})
	}
}

// TestSchedule sends an event every 70ms for 2.24s: the maximum wait
// (1s) signals twice while they last, the debounce (100ms) once after.
func TestSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, events, _ := start(Options{Debounce: 100 * time.Millisecond, MaxWait: time.Second})
		begin := time.Now()
		var got []time.Duration
		collected := make(chan struct{})
		go func() {
			defer close(collected)
			for range w.C() {
				got = append(got, time.Since(begin))
			}
		}()
		for i := range 33 {
			if i > 0 {
				time.Sleep(70 * time.Millisecond)
			}
			events <- fsnotify.Event{Name: file, Op: fsnotify.Write}
		}
		time.Sleep(time.Hour)
		close(events)
		<-collected
		want := []time.Duration{1000 * time.Millisecond, 2050 * time.Millisecond, 2340 * time.Millisecond}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("signal times (-want +got):\n%s", diff)
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestErrors: every error is logged; an overflow, which means events were
// lost, also signals.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		err        error
		wantSignal bool
	}{
		{fsnotify.ErrEventOverflow, true},
		{errors.New("disk on fire"), false},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log lockedBuffer
				w, events, errs := start(Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
				errs <- tc.err
				time.Sleep(time.Hour)
				synctest.Wait()
				if got := pending(w); got != tc.wantSignal {
					t.Errorf("signal: %v, want %v", got, tc.wantSignal)
				}
				if !strings.Contains(log.String(), tc.err.Error()) || !strings.Contains(log.String(), file) {
					t.Errorf("log %q does not name the error and the file", log.String())
				}
				close(events)
				<-w.done
			})
		})
	}
}

// TestReplaced: with Options.Replaced, a file's creation (a rename into
// place) or a permission change signals after Replaced, a write after the
// whole debounce, and a write right after a creation postpones the signal
// to the whole debounce again.
func TestReplaced(t *testing.T) {
	created := fsnotify.Event{Name: file, Op: fsnotify.Create}
	written := fsnotify.Event{Name: file, Op: fsnotify.Write}
	chmod := fsnotify.Event{Name: file, Op: fsnotify.Chmod}
	for _, tc := range []struct {
		name        string
		evs         []fsnotify.Event
		early, late bool // a signal 25ms after the last event, and 1s after
	}{
		{"created", []fsnotify.Event{created}, true, true},
		{"permissions changed", []fsnotify.Event{chmod}, true, true},
		{"written", []fsnotify.Event{written}, false, true},
		{"created, then written", []fsnotify.Event{created, written}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, events, _ := start(Options{Debounce: time.Second, Replaced: 20 * time.Millisecond, Chmod: true})
				for _, ev := range tc.evs {
					events <- ev
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond)
				synctest.Wait()
				early := pending(w)
				if early != tc.early {
					t.Errorf("signal 25ms after the last event: %v, want %v", early, tc.early)
				}
				time.Sleep(time.Second)
				synctest.Wait()
				if got := early || pending(w); got != tc.late {
					t.Errorf("signal within 1s: %v, want %v", got, tc.late)
				}
				close(events)
				<-w.done
			})
		})
	}
}
