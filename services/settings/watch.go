package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/filewatch"
	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// hub pokes every watcher of a Store when the settings file may have
// changed. One hub serves every Watch of a Store; it stops with the last one.
type hub struct {
	w    *filewatch.Watcher
	subs map[*watcher]struct{}
	done chan struct{}
}

// watcher is one Watch call: a goroutine that re-reads the file when poked.
type watcher struct {
	poke chan struct{}
	stop chan struct{}
	done chan struct{}
}

func (st *Store) subscribe(w *watcher) error {
	st.watchMu.Lock()
	defer st.watchMu.Unlock()
	if st.hub == nil {
		dir := filepath.Dir(st.path)
		if err := fsutil.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("settings: create %s to watch it: %w", dir, err)
		}
		paths := []string{st.path}
		// A settings file linked from a dotfiles repository is edited
		// there: follow the target too (one not yet created included,
		// when its directory is there to watch).
		if target, err := st.target(); err == nil && target != st.path {
			if _, err := os.Stat(filepath.Dir(target)); err == nil {
				paths = append(paths, target)
			}
		}
		// The project file is followed when its directory is there; one
		// created later is read by the next Read, and watched from the
		// next start.
		if st.project != "" {
			if _, err := os.Stat(filepath.Dir(st.project)); err == nil {
				paths = append(paths, st.project)
			}
		}
		fw, err := filewatch.New(paths, filewatch.Options{Debounce: st.debounce, MaxWait: 10 * st.debounce, Logger: st.logger})
		if err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		st.hub = &hub{w: fw, subs: map[*watcher]struct{}{}, done: make(chan struct{})}
		go st.run(st.hub)
	}
	st.hub.subs[w] = struct{}{}
	return nil
}

func (st *Store) unsubscribe(w *watcher) {
	st.watchMu.Lock()
	h := st.hub
	if h == nil {
		st.watchMu.Unlock()
		return
	}
	delete(h.subs, w)
	last := len(h.subs) == 0
	if last {
		st.hub = nil
	}
	st.watchMu.Unlock()
	if last {
		h.w.Close()
		<-h.done
	}
}

// run pokes every watcher on each signal of the file watch, until it is
// closed.
func (st *Store) run(h *hub) {
	defer close(h.done)
	for range h.w.C() {
		st.watchMu.Lock()
		for w := range h.subs {
			select {
			case w.poke <- struct{}{}:
			default: // already poked; it will read the latest file
			}
		}
		st.watchMu.Unlock()
	}
}

// Watch calls fn with the section's value whenever the file changes on disk
// and the section's content changed; err reports a file that no longer parses
// (the last good value is kept). The watch ends when s is disposed, or
// earlier by remove; a nil s panics (in a test, use host.NewScope).
//
// Each bad version of the file is reported once, with the last good value.
// When the file is good again fn gets the value even if it equals the last
// good one, so that a consumer can clear the error it showed. The value at
// the time Watch is called is the starting point and is not reported; read
// it with Read after Watch returns, and no change falls between the two. fn runs on a goroutine of its own, one call at a time. After
// remove returns fn is not called again; remove must not be called from fn.
func Watch[T any](st *Store, s *host.Scope, section string, fn func(v T, err error)) (remove func()) {
	if s == nil {
		panic("settings: Watch needs the watching plugin's *host.Scope, got nil (in a test, use host.NewScope)")
	}
	var (
		last     T
		lastBad  [32]byte // hash of the last bad version reported
		reported bool     // a bad version was reported and not yet cleared
	)
	// state reads the file and returns the section's value, or an error and
	// the hash of the version that caused it.
	state := func() (T, [32]byte, error) {
		var v T
		snap, err := st.snapshot()
		if err != nil {
			return v, snap.sum, err
		}
		if _, err := readSection(snap, section, &v); err != nil {
			var zero T
			return zero, snap.sum, err
		}
		return v, snap.sum, nil
	}
	if err := checkSection(section); err != nil {
		panic(err) // section names are constants in the calling plugin
	}
	// A panicking fn is logged, not fatal: the watch goes on.
	call := func(v T, err error) {
		defer func() {
			if r := recover(); r != nil {
				st.logger.Error("settings watcher panicked", "section", section, "panic", r)
			}
		}()
		fn(v, err)
	}
	w := &watcher{poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if err := st.subscribe(w); err != nil {
		st.logger.Error("settings: cannot watch the file; hand edits need a restart", "section", section, "err", err)
		return func() {}
	}
	// The starting point is read once the directory is watched, so that no
	// edit falls between the two: one made meanwhile leaves a poke behind.
	if v, sum, err := state(); err != nil {
		lastBad = sum // already there: Read reports it
	} else {
		last = v
	}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-w.poke:
			}
			v, sum, err := state()
			switch {
			case err != nil:
				if sum != lastBad {
					lastBad, reported = sum, true
					call(last, err)
				}
			case reported || !reflect.DeepEqual(v, last):
				last, reported, lastBad = v, false, [32]byte{}
				call(v, nil)
			}
		}
	}()
	return s.Effect("settings watch "+section, func() {
		close(w.stop)
		<-w.done
		st.unsubscribe(w)
	})
}
