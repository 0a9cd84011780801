package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/internal/filewatch"
)

// DefaultDebounce is how long Watch waits after the last change to the file
// before reading it, when Options.Debounce is zero: editors write a file in
// several steps (truncate, write, rename), and one reload should see the
// end result.
const DefaultDebounce = 100 * time.Millisecond

// replacedDebounce is how long Watch waits after a file is created or its
// permissions change (at most the debounce): an editor that saves by
// renaming a finished file into place is done, and a client of a gateway
// sees the edit sooner. A write that follows waits the whole debounce.
const replacedDebounce = 20 * time.Millisecond

// DefaultDebounceMax is the longest a stream of changes postpones a reload
// when Options.DebounceMax is zero.
const DefaultDebounceMax = time.Second

// Watch applies path now and again whenever it, or a file its include list
// names, changes on disk (debounced, at most Options.DebounceMax after the
// first change; editors that save by rename are followed; a file created
// where an include glob matches counts, in a directory created after Watch
// began too) or Reload is called, until ctx is
// done. A composition that fails to parse or validate changes nothing and
// is logged with its file and line.
//
// Watch watches the files' directories, not the files, so a save that
// replaces a file (rename over it, or delete and create) is seen like one
// that writes it in place. A file that is a symlink is followed to its
// target, whose directory is watched too, so an edit made where the file
// really lives (a dotfiles repository) applies; each read follows the
// links anew, so a link re-pointed is followed. A change of permissions
// counts as a change (a file made readable again is read). Content
// identical to the last one read is skipped. A file over
// MaxCompositionSize is refused and changes nothing. Reloads run one at a time on one goroutine: a change that
// arrives while instances are still starting is applied after them, from
// the files as they are then, so intermediate versions may be skipped.
//
// Watch returns the error of the first load if no composition was applied
// before (nothing runs then), or nil once ctx is done. It leaves the
// instances running: call Shutdown, which also waits for a reload still in
// flight.
func (h *Host) Watch(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("watch %s: %w", path, err)
	}
	debounce := h.opts.Debounce
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	debounceMax := h.opts.DebounceMax
	if debounceMax <= 0 {
		debounceMax = DefaultDebounceMax
	}
	// A permission change counts: a file made readable again is read at
	// once, and a chmod that changed nothing costs a read whose content
	// hash matches the last one.
	watchOpts := filewatch.Options{Debounce: debounce, MaxWait: debounceMax, Replaced: min(debounce, replacedDebounce), Logger: h.log, Chmod: true}
	// Subscribe before the first load, so no change falls between them.
	watching := []string{abs}
	w, err := filewatch.New(watching, watchOpts)
	if err != nil {
		return err
	}
	defer func() { w.Close() }()

	signal := make(chan struct{}, 1)
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return ErrClosed
	case h.reload != nil:
		h.mu.Unlock()
		return errors.New("watch: this host already watches a composition")
	}
	h.reload = signal
	h.mu.Unlock()
	// Tickets still unanswered when both this Watch stops taking requests
	// and its worker stops loading never will be: whichever of the two ends
	// last marks them dropped, so their waiters stop.
	ends := 1 // this Watch's own end; the worker, once started, adds one
	end := func() {
		h.mu.Lock()
		if ends--; ends == 0 {
			h.stats.Dropped = h.reloadsAsked
			h.touchLocked()
		}
		h.mu.Unlock()
	}
	defer func() {
		h.mu.Lock()
		h.reload = nil
		h.mu.Unlock()
		end()
	}()

	// rewatch carries the files a load found the composition to be made
	// of, for the event loop to follow when they are not those it watches.
	rewatch := make(chan []string, 1)
	r := &reloader{h: h, path: path, watched: func(files []string) {
		select {
		case <-rewatch:
		default:
		}
		rewatch <- files
	}}
	h.mu.Lock()
	running := h.applied
	h.mu.Unlock()
	if err := r.load(ctx, true, false); err != nil && !running {
		// Nothing runs: the caller should hear of it. When a composition
		// was applied before (Update, then Watch), it keeps running and
		// the next good save applies, as for any bad save.
		return err
	}

	// The worker reloads; this goroutine only turns events into kicks, so
	// it never waits on a slow plugin.
	kick := make(chan struct{}, 1)
	var forced atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	ends++
	h.wg.Go(func() {
		defer end()
		for {
			select {
			case <-stop:
				return
			case <-kick:
				if ctx.Err() != nil {
					return
				}
				forced := forced.Swap(false)
				// Read after the swap: every request counted here set
				// forced before (or is about to, and brings another
				// load), so this load answers them all.
				h.mu.Lock()
				through := h.reloadsAsked
				h.mu.Unlock()
				r.load(ctx, forced, forced)
				if forced {
					h.mu.Lock()
					h.stats.Through = max(h.stats.Through, through)
					h.touchLocked()
					h.mu.Unlock()
				}
			}
		}
	})
	h.mu.Unlock()
	poke := func() {
		select {
		case kick <- struct{}{}:
		default: // a reload is queued already; it will read the latest file
		}
	}

	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.C():
			if !ok {
				return nil
			}
			poke()
		case files := <-rewatch:
			files = watchable(files)
			if slices.Equal(files, watching) {
				continue
			}
			next, err := filewatch.New(files, watchOpts)
			if err != nil {
				h.log.Warn("an included file's directory cannot be watched; edits there apply on the next change of the main file or SIGHUP", "file", path, "err", err)
				continue
			}
			w.Close()
			w, watching = next, files
			h.log.Debug("watching the composition's files", "files", files)
			// A change made between the load that named these files and
			// the new watch would be missed: read once more (a no-op
			// when nothing changed).
			poke()
		case <-signal:
			forced.Store(true)
			poke()
		}
	}
}

// watchable returns what to watch for the composition's files and globs:
// each one whose directory exists, and for one whose directory does not
// exist yet (composition.d before `dsh-host import --write --dir` makes
// it), the first missing directory on its path, whose creation brings the
// reload that watches what it holds.
func watchable(files []string) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		for {
			dir := filepath.Dir(f)
			if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
				break
			}
			f = dir
		}
		out = append(out, f)
	}
	return out
}

// Reload asks a running Watch to re-read its file (what SIGHUP does). The
// file is applied even when its content did not change, and failed
// instances are started again: an explicit reload is how a user retries an
// instance whose apply failed for a reason outside the file (a server that
// was down). A reload caused by a change on disk retries nothing. It
// reports false when no Watch runs, so no reload will come.
func (h *Host) Reload() bool {
	_, ok := h.RequestReload()
	return ok
}

// RequestReload is Reload, returning the request's ticket: the reload
// that answers it is done once Reloads().Through reaches the ticket. A
// load that was under way when the request came (a save's, read before a
// front end's edit) does not answer it, so a caller that edited the file,
// then asked, sees its own edit's outcome.
func (h *Host) RequestReload() (ticket uint64, ok bool) {
	h.mu.Lock()
	signal := h.reload
	if signal != nil {
		h.reloadsAsked++
		ticket = h.reloadsAsked
	}
	h.mu.Unlock()
	if signal == nil {
		h.log.Warn("reload requested, but no composition file is watched")
		return 0, false
	}
	select {
	case signal <- struct{}{}:
	default:
	}
	return ticket, true
}

// reloader reads and applies one watched composition; only the Watch
// worker (and the first load, before it starts) uses it.
type reloader struct {
	h        *Host
	path     string // as the user gave it, for messages
	last     sha256hash
	haveLast bool
	// watched is told the files and globs of every composition read.
	watched func(files []string)
}

// load reads the composition and applies it, unless its content is the
// one read last and force is false; retryFailed starts failed instances
// again.
func (r *reloader) load(ctx context.Context, force, retryFailed bool) error {
	h := r.h
	begin := time.Now()
	c, l := readComposition(r.path, nil, h.opts.LookupEnv)
	r.watched(l.watch)
	err := errors.Join(l.errs...)
	if c == nil && !force && errors.Is(err, fs.ErrNotExist) {
		// Mid-save (deleted, not yet created): the create that follows
		// brings another event.
		h.log.Warn("composition file is gone; the running instances are unchanged", "file", r.path)
		return nil
	}
	if !force && r.haveLast && l.sum == r.last {
		h.mu.Lock()
		h.stats.Skipped++
		h.touchLocked() // Reloads changed: wake WaitStatus
		h.mu.Unlock()
		return nil
	}
	r.last, r.haveLast = l.sum, true
	if err == nil {
		_, err = h.update(ctx, c, retryFailed)
	}
	if err != nil {
		if errors.Is(err, ErrClosed) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			r.haveLast = false // not applied: read it again next time
			return err
		}
		r.failed(err)
		return err
	}
	h.mu.Lock()
	h.stats.Applied++
	h.stats.LastError = nil
	h.stats.LastApplied = time.Now()
	h.touchLocked()
	h.mu.Unlock()
	h.log.Info("composition applied", "file", r.path, "entries", len(c.Entries), "took", time.Since(begin).Round(time.Microsecond))
	return nil
}

func (r *reloader) failed(err error) {
	h := r.h
	h.mu.Lock()
	h.stats.Failed++
	h.stats.LastError = err
	h.touchLocked()
	h.mu.Unlock()
	h.log.Error("composition not applied; the running instances are unchanged", "file", r.path, "err", err)
}
