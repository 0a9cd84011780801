// Package filewatch tells when files may have changed on disk, for the
// parts of dsh-host that re-read a file a user edits by hand: the
// composition and the settings file.
//
// A Watcher watches each file's directory, not the file, so a save that
// replaces the file (rename over it, or delete and create) is seen like a
// write in place. Editors save in several steps, so events are debounced:
// one signal follows a burst, at most MaxWait after its first event even
// when the file is rewritten without pause.
//
// A path may be a glob in its last element (composition.d/*.yml): every
// file of that directory the pattern matches counts, including files
// created after New.
//
// Each directory is watched under its real path (symlinks resolved): one
// directory reached by two paths (a linked dotfiles directory and the
// directory a file's symlink points into) is one watch, whose events
// all count, under whichever path a file was given.
package filewatch

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/dsh-host/dsh-host/internal/debounce"
)

// DefaultDebounce is Options.Debounce when it is zero.
const DefaultDebounce = 100 * time.Millisecond

// Options configures a Watcher.
type Options struct {
	// Debounce is how long the watcher waits after the last event on a
	// file before it signals (default DefaultDebounce).
	Debounce time.Duration
	// MaxWait bounds how long a stream of events may postpone the signal
	// (default 10 × Debounce).
	MaxWait time.Duration
	// Replaced, when positive, is the delay after an event that leaves a
	// file whole: its creation (an editor's save renames a finished file
	// into place) or a change of its permissions. A write (or a removal)
	// after it waits Debounce again, so a file written in place after its
	// creation is still read once complete.
	Replaced time.Duration
	// Logger receives the errors the watch reports (default slog.Default()).
	Logger *slog.Logger
	// Chmod makes a change of permissions alone signal too. Off, it is
	// ignored, for a chmod leaves the content as it was; on, a file made
	// readable again after a read failed on it is read at once.
	Chmod bool
}

// Watcher signals on C when one of its files may have changed.
type Watcher struct {
	fw    *fsnotify.Watcher
	files []string        // as given, for messages
	names map[string]bool // the absolute paths whose events count
	globs []string        // the absolute glob patterns whose matches count
	opts  Options
	c     chan struct{}
	done  chan struct{}
}

// New watches paths (files, or globs in the last path element). The
// directories are watched when New returns, so a caller that reads the
// files after New misses no change made after the read. Close the Watcher
// to stop it.
func New(paths []string, opts Options) (*Watcher, error) {
	if len(paths) == 0 {
		return nil, errors.New("filewatch: no file to watch")
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", paths[0], err)
	}
	w := newWatcher(paths, opts)
	w.fw = fw
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err == nil {
			abs = realDir(abs)
			// Watching a directory twice is a no-op.
			err = fw.Add(filepath.Dir(abs))
		}
		if err != nil {
			fw.Close()
			return nil, fmt.Errorf("watch %s: %w", filepath.Dir(p), err)
		}
		w.add(abs)
	}
	go w.run(fw.Events, fw.Errors)
	return w, nil
}

func newWatcher(files []string, opts Options) *Watcher {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 10 * opts.Debounce
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Watcher{
		files: files,
		names: map[string]bool{},
		opts:  opts,
		c:     make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
}

// realDir returns abs with its directory's symlinks resolved, the last
// element kept as it is (the file may be a link itself, or not exist yet).
// fsnotify names a directory's events after the path it was first added
// under, so a directory added under two paths reports events under one
// only; under its real path it has one name.
func realDir(abs string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return abs // Add reports what is wrong with it
	}
	return filepath.Join(dir, filepath.Base(abs))
}

// add makes events on abs, a clean absolute path or glob, count.
func (w *Watcher) add(abs string) {
	if strings.ContainsAny(filepath.Base(abs), `*?[\`) {
		w.globs = append(w.globs, abs)
		return
	}
	w.names[abs] = true
}

// counts reports whether an event on name concerns a watched file.
func (w *Watcher) counts(name string) bool {
	name = filepath.Clean(name)
	if w.names[name] {
		return true
	}
	for _, g := range w.globs {
		if ok, _ := filepath.Match(g, name); ok {
			return true
		}
	}
	return false
}

// C receives a value when a watched file may have changed: read it again.
// Signals not yet received coalesce into one, so a slow reader reads the
// latest file once. C is closed when the Watcher stops.
func (w *Watcher) C() <-chan struct{} { return w.c }

// Close stops the Watcher and waits for its goroutine to end.
func (w *Watcher) Close() error {
	err := w.fw.Close()
	<-w.done
	return err
}

// run turns events into debounced signals until the event channels close.
func (w *Watcher) run(events <-chan fsnotify.Event, errs <-chan error) {
	defer close(w.done)
	defer close(w.c)
	d := debounce.New(w.opts.Debounce, w.opts.MaxWait, debounce.Signal(w.c))
	// Stopped before c is closed: Stop waits for a signal being sent.
	defer d.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			// A chmod alone leaves the content as it was.
			if (ev.Op != fsnotify.Chmod || w.opts.Chmod) && w.counts(ev.Name) {
				if w.opts.Replaced > 0 && !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
					d.TriggerAfter(w.opts.Replaced)
				} else {
					d.Trigger()
				}
			}
		case err, ok := <-errs:
			if !ok {
				return
			}
			w.opts.Logger.Warn("watching files", "files", w.files, "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				d.Trigger() // events were lost: read again to be sure
			}
		}
	}
}
