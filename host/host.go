package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ErrClosed is returned by Update and Watch after Shutdown.
var ErrClosed = errors.New("host: shut down")

// DefaultDisposeTimeout bounds the dispose of one instance when
// Options.DisposeTimeout is zero.
const DefaultDisposeTimeout = 10 * time.Second

// Host runs the instances of a composition. It is safe for concurrent use.
type Host struct {
	opts Options
	log  *slog.Logger
	tel  *runTelemetry

	// base is the parent of every instance's scope context; Shutdown
	// cancels it.
	base       context.Context
	cancelBase context.CancelFunc

	// sem is held by whoever reconciles (Apply, a settle after a late
	// Provide, Shutdown): one at a time.
	sem chan struct{}
	// wg counts background goroutines (late settles, the watch worker);
	// Shutdown waits for them.
	wg sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	abandoned bool        // Shutdown gave up waiting for an Apply
	applied   bool        // a composition was applied at least once
	order     []*instance // composition order, built-ins first
	byID      map[string]*instance
	services  map[string]*provision
	claims    map[Claim]*Scope // who holds each claimed name
	// secrets are the environment variables the composition's enabled
	// entries name as secret (Definition.Secrets): Scope.Environ leaves
	// them out.
	secrets map[string]bool
	// compFile is the absolute path of the last applied composition's
	// main file, "" for one built in code (Scope.CompositionFile).
	compFile string
	lastRun  uint64
	changed  chan struct{} // closed and replaced at every change (WaitStatus)
	notes    []InstanceStatus
	stats    ReloadStats
	reload   chan struct{} // the running Watch's reload signal, or nil
	// reloadsAsked counts Reload requests: each one's ticket
	// (ReloadStats.Through says which are answered).
	reloadsAsked uint64

	statusHooks hookList[func(InstanceStatus)]
	notifyMu    sync.Mutex // serializes OnStatus deliveries, in order

	// wasReady: the first composition applied has had no instance
	// starting (Scope.Readiness); a reload does not take it back. Guarded
	// by mu.
	wasReady bool
}

// instance is one running (or pending, failed, disabled) composition entry.
type instance struct {
	host   *Host
	entry  Entry
	plugin *plugin
	cfg    any // the config Check decoded, used by the first start
	// claims and lazy are what the entry's config declares (Status);
	// a run's own claims, when it has one, are its scope's.
	claims []Claim
	lazy   bool

	// Fields below are guarded by host.mu.

	// providers are the enabled instances whose plugins provide a service
	// this one injects: it is evaluated only after them.
	providers []*instance
	scope     *Scope // the current run, nil when not running
	last      *Scope // the last run, for Detail after it ended
	run       uint64 // the current run's number, unique in the host
	state     State
	since     time.Time
	err       string
	// evaluated is false while the instance still has to be started (or
	// found pending); seen is the run of each injected service's provider
	// (0: none) when it was. A change in those runs restarts the instance.
	evaluated bool
	seen      map[string]uint64

	// readyEntry is the entry of the last run that was ready: the config a
	// failed edit keeps or restores (nil when no run was ready yet).
	readyEntry *Entry
	// beside: the entry changed and its plugin allows overlap; the new
	// config starts beside the serving run (startBeside).
	beside bool
	// fallback is the config to start again if the changed entry's new
	// config fails (restore, when the plugin cannot overlap).
	fallback *Entry
	// next is the staged run starting beside the serving one, if any.
	next *Scope
	// kept says why the instance runs its previous config (Status.Kept).
	kept string
	// notReady is why the last start, which had nothing to keep, did not
	// get ready; the instance runs on (for the reload's outcome).
	notReady string
}

// New returns a host with no instances. Nil options mean defaults.
func New(opts *Options) *Host {
	h := &Host{
		sem:      make(chan struct{}, 1),
		byID:     map[string]*instance{},
		services: map[string]*provision{},
		claims:   map[Claim]*Scope{},
		changed:  make(chan struct{}),
	}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	if h.opts.DisposeTimeout <= 0 {
		h.opts.DisposeTimeout = DefaultDisposeTimeout
	}
	if h.opts.ReadyTimeout <= 0 {
		h.opts.ReadyTimeout = DefaultReadyTimeout
	}
	if h.opts.DrainTimeout <= 0 {
		h.opts.DrainTimeout = DefaultDrainTimeout
	}
	if h.opts.LookupEnv == nil {
		h.opts.LookupEnv = os.LookupEnv
	}
	h.log = h.opts.Logger
	h.tel = newTelemetry(h.opts.Metrics, h.opts.Tracing, h.inComposition)
	if err := h.tel.reg.Register(newHostCollector(h)); err != nil {
		h.log.Warn("the host's metrics are not registered: the registry has them already", "err", err)
	}
	base := context.Background()
	if h.opts.Context != nil {
		base = context.WithoutCancel(h.opts.Context)
	}
	h.base, h.cancelBase = context.WithCancel(base)
	return h
}

func (h *Host) lock(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Host) unlock() { <-h.sem }

// Update reconciles the running instances with c by id: added entries start,
// removed ones are disposed, changed ones (plugin, config or disabled) are
// replaced (beside the old instance, or with the previous config restored
// if the new one fails: see Definition.Overlap), unchanged ones are not
// touched. Built-in
// plugins missing from c are added. An invalid c changes nothing and returns
// every problem found. Update returns once every started instance has settled
// (active, failed or pending); an instance's failure is in Status, not in the
// returned error.
//
// Updates run one at a time; ctx bounds the wait for an earlier one. If ctx
// ends while instances are still starting, Update returns ctx's error and
// the reconcile finishes in the background (a plugin's Apply cannot be
// interrupted, only its scope's context cancelled, which Shutdown does).
func (h *Host) Update(ctx context.Context, c *Composition) error {
	_, err := h.update(ctx, c, false)
	return err
}

// Reconcile is Update, returning how each entry it started, restarted or
// disposed came out (started, restarted, kept, failed with its error,
// pending or disposed): the started ones, then the restarted, then the
// disposed, each in composition order; what a front end's reload or a
// test checks. Entries left as they were are not listed. Outcomes
// are nil when the update did not finish (an error).
func (h *Host) Reconcile(ctx context.Context, c *Composition) ([]Outcome, error) {
	return h.update(ctx, c, false)
}

func (h *Host) update(ctx context.Context, c *Composition, retryFailed bool) ([]Outcome, error) {
	list, err := plan(c, h.opts.Entries)
	if err != nil {
		return nil, err
	}
	if err := h.lock(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.unlock()
		return nil, ErrClosed
	}
	// Before any instance of this update starts, so that none of them
	// passes a secret of an entry starting beside it to a child.
	h.secrets = secretsOf(list)
	h.compFile = ""
	if c != nil && c.File != "" {
		if abs, err := filepath.Abs(c.File); err == nil {
			h.compFile = abs
		}
	}
	done := make(chan struct{})
	var outcomes []Outcome // written before done closes
	h.wg.Go(func() {
		defer h.unlock()
		defer close(done)
		rep := h.reconcile(list, retryFailed)
		h.mu.Lock()
		h.applied = true
		h.mu.Unlock()
		h.settle(rep)
		outcomes = rep.log(h)
		h.mu.Lock()
		h.stats.Outcomes = outcomes
		h.readinessLocked()
		h.touchLocked() // wakes WaitReadiness: applied changes no state
		h.mu.Unlock()
		h.mu.Lock()
		abandoned := h.abandoned
		h.mu.Unlock()
		if abandoned {
			// Shutdown gave up waiting for this apply: finish its work.
			h.disposeAll(h.opts.DisposeTimeout)
		}
	})
	h.mu.Unlock()
	select {
	case <-done:
		return outcomes, nil
	case <-ctx.Done():
		select {
		case <-done: // finished as ctx ended: report what happened
			return outcomes, nil
		default:
		}
		return nil, fmt.Errorf("update: %w; instances still starting finish in the background", ctx.Err())
	}
}

// Shutdown disposes every instance, dependents first, each bounded by
// Options.DisposeTimeout. It returns an error if any dispose timed out.
// After Shutdown the host runs nothing and Update returns ErrClosed. The
// scopes of instances still starting are cancelled at once, so that their
// Apply can give up. If ctx ends while an Apply still has not returned,
// Shutdown cancels every scope's context and returns an error; the
// instances are disposed once the plugin Apply calls they wait for return.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	// Instances still starting are about to be disposed: cancelling their
	// scopes now lets a plugin's Apply that waits (a server connecting)
	// return at once, instead of holding the shutdown up until it is done.
	for _, in := range h.order {
		if in.state == StateStarting && in.scope != nil {
			in.scope.cancel()
		}
		if in.next != nil {
			in.next.cancel()
		}
	}
	h.mu.Unlock()
	if err := h.lock(ctx); err != nil {
		h.mu.Lock()
		h.abandoned = true
		h.mu.Unlock()
		h.cancelBase()
		return fmt.Errorf("shutdown: instances still starting; they are disposed once their apply returns: %w", err)
	}
	errs := h.disposeAll(h.boundedTimeout(ctx))
	h.cancelBase()
	h.unlock()

	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("shutdown: background work still running: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// disposeAll disposes every instance, last first (disposeInst takes an
// instance's dependents down before it), and forgets them. It returns the
// dispose timeouts. Callers hold h.sem.
func (h *Host) disposeAll(timeout time.Duration) []error {
	h.mu.Lock()
	order := slices.Clone(h.order)
	h.mu.Unlock()
	var errs []error
	for i := len(order) - 1; i >= 0; i-- {
		if err := h.disposeInst(order[i], timeout); errors.Is(err, ErrDisposeTimeout) {
			errs = append(errs, err)
		}
	}
	h.mu.Lock()
	h.order = nil
	h.byID = map[string]*instance{}
	h.touchLocked()
	h.mu.Unlock()
	return errs
}

// boundedTimeout is the dispose timeout, shortened to what is left of ctx.
func (h *Host) boundedTimeout(ctx context.Context) time.Duration {
	d := h.opts.DisposeTimeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < d {
			d = max(left, time.Millisecond)
		}
	}
	return d
}
