package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Scope is the lifetime of one plugin instance: everything the instance does
// that outlives a call is registered on it and undone, last first, when the
// instance is disposed. Its Context is cancelled at dispose.
type Scope struct {
	id     string
	ctx    context.Context
	cancel context.CancelFunc
	logger *slog.Logger
	inst   *instance // nil for a scope made by NewScope

	mu sync.Mutex
	// disposers are keyed by registration number, so that a registration
	// released early (a tool unregistered by a re-sync) leaves the scope in
	// O(1); dispose runs them by number, last first.
	disposers map[uint64]disposer
	nextSeq   uint64
	disposed  bool

	detail atomic.Pointer[string]
	// facts are what the instance published of itself besides its
	// detail (SetEndpoint, SetDormant...), replaced whole under factsMu;
	// claims are the names this run holds (Definition.Claims).
	facts   atomic.Pointer[facts]
	factsMu sync.Mutex
	claims  atomic.Pointer[[]Claim]

	// injected holds the services the host resolved for the instance before
	// apply; it is not written after, so reads need no lock.
	injected map[string]any
	// local holds services provided on a scope that belongs to no host
	// (NewScope), guarded by mu.
	local map[string]any

	// Readiness, overlap and drain (ready.go).
	ready readiness
	// replaces is the serving scope of the entry this one is started
	// beside (Definition.Overlap), nil otherwise; staged holds while this
	// one's registrations must stay invisible.
	replaces *Scope
	staged   atomic.Bool
	retired  atomic.Bool
	onLive   []func() // guarded by mu
	// calls counts the calls in flight (Enter), with closingBit set once
	// Enter refuses; idle hears the last call leave a closing scope.
	calls atomic.Int64
	idle  atomic.Pointer[chan struct{}]
	// holds counts the open HoldReadiness of this run, holdWhy the last
	// reason; guarded by the host's mu (hold.go).
	holds   int
	holdWhy string
	// moved are the claims this scope shares with the one it replaces,
	// handed over at the swap; guarded by the host's mu.
	moved []Claim

	// metrics is this run's registry (Registerer), guarded by mu; tracer
	// is a NewScope's (SetTracer).
	metrics *runMetrics
	tracer  trace.Tracer
}

// ErrDisposeTimeout is returned (wrapped) by Dispose and Host.Shutdown when
// a disposer did not finish in time and was abandoned.
var ErrDisposeTimeout = errors.New("dispose timed out")

type disposer struct {
	label string
	fn    func() error
}

// NewScope returns a scope that belongs to no host, for code that runs plugin
// parts outside a host (tests, tools). The caller disposes it with Dispose.
func NewScope(parent context.Context, id string, logger *slog.Logger) *Scope {
	if logger == nil {
		logger = slog.Default()
	}
	return newScope(parent, id, logger, nil)
}

func newScope(parent context.Context, id string, logger *slog.Logger, inst *instance) *Scope {
	ctx, cancel := context.WithCancel(parent)
	return &Scope{id: id, ctx: ctx, cancel: cancel, logger: logger.With("instance", id), inst: inst, ready: readiness{done: make(chan struct{})}}
}

// ID returns the composition id of the instance.
func (s *Scope) ID() string { return s.id }

// Position returns the instance's place in the composition, built-in
// entries first, counted from 0: where one server's offer shadows
// another's, the composition's order decides rather than which started
// first. It is -1 on a scope made by NewScope and once the entry left the
// composition. Moving an entry changes it without restarting the instance.
func (s *Scope) Position() int {
	if s.inst == nil {
		return -1
	}
	h := s.inst.host
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Index(h.order, s.inst)
}

// Context returns a context cancelled when the scope is disposed. Work that
// outlives apply selects on its Done channel.
func (s *Scope) Context() context.Context { return s.ctx }

// Environ returns the environment a child process the instance starts
// should inherit: the host process's (os.Environ), less every variable an
// enabled entry of the composition names as secret (Definition.Secrets),
// such as the variable holding the gateway's bearer token. A plugin that
// starts processes passes Environ, not os.Environ, as their base; it may
// still add variables its own config names. On a scope made by NewScope
// it is os.Environ.
func (s *Scope) Environ() []string {
	env := os.Environ()
	if s.inst == nil {
		return env
	}
	h := s.inst.host
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.secrets) == 0 {
		return env
	}
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return h.secrets[name] || runtime.GOOS == "windows" && h.secretFoldLocked(name)
	})
}

// secretFoldLocked reports whether name is a secret without regard to
// case, as Windows compares variable names.
func (h *Host) secretFoldLocked(name string) bool {
	for n := range h.secrets {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// CompositionFile returns the absolute path of the composition file the
// host runs, so that a plugin may find files that belong beside it (a
// project's settings); "" on a scope made by NewScope or for a
// composition built in code. Read it in Apply: a reload of the same file
// does not restart an instance whose entry did not change.
func (s *Scope) CompositionFile() string {
	if s.inst == nil {
		return ""
	}
	h := s.inst.host
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.compFile
}

// Logger returns the instance's logger, tagged with its id.
func (s *Scope) Logger() *slog.Logger { return s.logger }

// OnDispose registers fn to run when the scope is disposed, after every
// disposer registered later than it. An error fn returns is logged and does
// not stop the others. Registering on a scope that is already disposed runs
// fn at once, so nothing registered late is leaked.
func (s *Scope) OnDispose(label string, fn func() error) {
	s.add(label, fn)
}

// Effect records a registration made on the scope's behalf (a tool, a
// hook, a command): undo runs when the scope is disposed, last first like
// every disposer. The release func it returns undoes the registration
// earlier, at most once, and forgets it, so a registration released early
// leaves nothing on the scope. On a scope already disposed, undo runs at
// once and release does nothing.
//
// Services use Effect to tie what a plugin registers to the plugin's
// scope, so the plugin never writes a teardown of its own.
func (s *Scope) Effect(label string, undo func()) (release func()) {
	var once sync.Once
	run := func() error { once.Do(undo); return nil }
	seq, ok := s.add(label, run)
	if !ok {
		return func() {}
	}
	return func() {
		s.mu.Lock()
		delete(s.disposers, seq)
		s.mu.Unlock()
		run()
	}
}

// add records a disposer and returns its number; on a disposed scope it
// runs fn at once and reports false.
func (s *Scope) add(label string, fn func() error) (uint64, bool) {
	s.mu.Lock()
	if s.disposed {
		s.mu.Unlock()
		s.logger.Warn("registered on a disposed scope; undone at once", "what", label)
		s.runDisposer(disposer{label, fn})
		return 0, false
	}
	if s.disposers == nil {
		s.disposers = map[uint64]disposer{}
	}
	s.nextSeq++
	seq := s.nextSeq
	s.disposers[seq] = disposer{label, fn}
	s.mu.Unlock()
	return seq, true
}

// orderedLocked returns the disposers in registration order.
func (s *Scope) orderedLocked() []disposer {
	seqs := slices.Sorted(maps.Keys(s.disposers))
	out := make([]disposer, len(seqs))
	for i, seq := range seqs {
		out[i] = s.disposers[seq]
	}
	return out
}

// Go runs fn on its own goroutine, tied to the scope: fn's context is the
// scope's, and dispose waits for fn to return.
//
// On a scope already disposed, fn still runs, with a cancelled context, and
// Go returns once it has.
func (s *Scope) Go(label string, fn func(ctx context.Context)) {
	done := make(chan struct{})
	// Started before OnDispose: on a disposed scope OnDispose runs the
	// disposer at once, and it waits for done.
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				s.logger.Error("goroutine panicked", "goroutine", label, "panic", r, "stack", string(debug.Stack()))
			}
		}()
		fn(s.ctx)
	}()
	s.OnDispose("goroutine "+label, func() error {
		s.cancel()
		<-done
		return nil
	})
}

// AfterFunc calls fn once after d unless the scope is disposed first. A
// dispose that comes while fn runs waits for it to return, as for Go, so fn
// never runs against what the scope's later disposers have undone.
func (s *Scope) AfterFunc(label string, d time.Duration, fn func()) {
	var mu sync.Mutex
	stopped := false
	t := time.AfterFunc(d, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped && s.ctx.Err() == nil {
			fn()
		}
	})
	s.OnDispose("timer "+label, func() error {
		t.Stop()
		mu.Lock()
		stopped = true
		mu.Unlock()
		return nil
	})
}

// SetDetail publishes a one-line, human-readable state of the instance
// ("connected, 12 tools", "reconnecting 3/10"); Status reports it.
func (s *Scope) SetDetail(detail string) {
	s.detail.Store(&detail)
	if s.inst != nil {
		s.inst.host.touch()
	}
}

// Detail returns what SetDetail last published.
func (s *Scope) Detail() string {
	if p := s.detail.Load(); p != nil {
		return *p
	}
	return ""
}

// Effects returns the labels of what is registered on the scope and not yet
// undone, in registration order (dispose undoes them last first): "on
// tools.changed", "provide tools", "goroutine reconnect". Tests assert on
// it; it is empty once dispose has begun.
func (s *Scope) Effects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.orderedLocked()
	out := make([]string, len(list))
	for i, d := range list {
		out[i] = d.label
	}
	return out
}

// disposedNow reports whether dispose has begun.
func (s *Scope) disposedNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disposed
}

// Dispose cancels the scope's context and runs its disposers, last first. It
// gives up after timeout (if positive), logging the disposer that is stuck
// and leaving it to finish on its own. Dispose is idempotent; it returns the
// disposers' errors joined, or a timeout error.
func (s *Scope) Dispose(timeout time.Duration) error {
	s.mu.Lock()
	if s.disposed {
		s.mu.Unlock()
		return nil
	}
	s.disposed = true
	s.calls.Or(closingBit)
	list := s.orderedLocked()
	s.disposers = nil
	s.mu.Unlock()

	s.cancel()
	// current names the disposer running; it starts at the first, so that
	// a timeout that fires before the goroutine below got to run (a
	// stalled machine) still names what is pending, not "".
	var current atomic.Pointer[string]
	if len(list) > 0 {
		current.Store(&list[len(list)-1].label)
	}
	done := make(chan error, 1)
	go func() {
		var errs []error
		for i := len(list) - 1; i >= 0; i-- {
			current.Store(&list[i].label)
			if err := s.runDisposer(list[i]); err != nil {
				errs = append(errs, err)
			}
		}
		s.retireMetrics()
		done <- errors.Join(errs...)
	}()
	if timeout <= 0 {
		return <-done
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		label := ""
		if p := current.Load(); p != nil {
			label = *p
		}
		s.logger.Error("dispose did not finish in time; abandoned", "timeout", timeout, "stuck", label)
		return fmt.Errorf("dispose %s: %q still running after %s: %w", s.id, label, timeout, ErrDisposeTimeout)
	}
}

func (s *Scope) runDisposer(d disposer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: panic: %v", d.label, r)
		}
		if err != nil {
			s.logger.Error("disposer failed", "what", d.label, "err", err)
		}
	}()
	if e := d.fn(); e != nil {
		return fmt.Errorf("%s: %w", d.label, e)
	}
	return nil
}
