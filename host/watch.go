package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/internal/filewatch"
)

// DefaultDebounce is how long Watch waits after the last change to the file
// before reading it, when Options.Debounce is zero: editors write a file in
// several steps (truncate, write, rename), and one reload should see the
// end result.
const DefaultDebounce = 100 * time.Millisecond

// DefaultDebounceMax is the longest a stream of changes postpones a reload
// when Options.DebounceMax is zero.
const DefaultDebounceMax = time.Second

// Watch applies path now and again whenever it changes on disk (debounced,
// at most Options.DebounceMax after the first change; editors that save by
// rename are followed) or Reload is called, until ctx is done. A file that fails to parse or validate changes nothing and is
// logged with its file and line.
//
// Watch watches the file's directory, not the file, so a save that replaces
// the file (rename over it, or delete and create) is seen like one that
// writes it in place. Content identical to the last one read is skipped.
// Reloads run one at a time on one goroutine: a change that arrives while
// instances are still starting is applied after them, from the file as it
// is then, so intermediate versions may be skipped.
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
	// Subscribe before the first load, so no change falls between them.
	w, err := filewatch.New([]string{abs}, filewatch.Options{Debounce: debounce, MaxWait: debounceMax, Logger: h.log})
	if err != nil {
		return err
	}
	defer w.Close()

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
	defer func() {
		h.mu.Lock()
		h.reload = nil
		h.mu.Unlock()
	}()

	r := &reloader{h: h, path: path, abs: abs}
	h.mu.Lock()
	running := h.applied
	h.mu.Unlock()
	if err := r.load(ctx, true, false); err != nil && !running {
		// Nothing runs: the caller should hear of it. When a composition
		// was applied before (LoadFile, then Watch), it keeps running and
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
	h.wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-kick:
				if ctx.Err() != nil {
					return
				}
				forced := forced.Swap(false)
				r.load(ctx, forced, forced)
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
		case <-signal:
			forced.Store(true)
			poke()
		}
	}
}

// Reload asks a running Watch to re-read its file (what SIGHUP does). The
// file is applied even when its content did not change, and failed
// instances are started again: an explicit reload is how a user retries an
// instance whose apply failed for a reason outside the file (a server that
// was down). A reload caused by a change on disk retries nothing.
func (h *Host) Reload() {
	h.mu.Lock()
	signal := h.reload
	h.mu.Unlock()
	if signal == nil {
		h.log.Warn("reload requested, but no composition file is watched")
		return
	}
	select {
	case signal <- struct{}{}:
	default:
	}
}

// reloader reads and applies one watched file; only the Watch worker (and
// the first load, before it starts) uses it.
type reloader struct {
	h        *Host
	path     string // as the user gave it, for messages
	abs      string
	last     [sha256.Size]byte
	haveLast bool
}

// load reads the file and applies it, unless its content is the one read
// last and force is false; retryFailed starts failed instances again.
func (r *reloader) load(ctx context.Context, force, retryFailed bool) error {
	h := r.h
	data, err := os.ReadFile(r.abs)
	if err != nil {
		if !force && errors.Is(err, fs.ErrNotExist) {
			// Mid-save (deleted, not yet created): the create that follows
			// brings another event.
			h.log.Warn("composition file is gone; the running instances are unchanged", "file", r.path)
			return nil
		}
		err = fmt.Errorf("read composition: %w", err)
		r.failed(err)
		return err
	}
	sum := sha256.Sum256(data)
	if !force && r.haveLast && sum == r.last {
		h.mu.Lock()
		h.stats.Skipped++
		h.mu.Unlock()
		return nil
	}
	r.last, r.haveLast = sum, true
	begin := time.Now()
	c, err := ParseComposition(r.path, data, h.opts.LookupEnv)
	if err == nil {
		err = h.apply(ctx, c, retryFailed)
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
