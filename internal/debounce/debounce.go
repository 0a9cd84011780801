// Package debounce runs something once a burst of triggers has paused,
// and no later than a maximum wait after the burst began: a file saved in
// several steps is read once, and a file (or a tool registry) that never
// stops changing is still read every so often.
package debounce

import (
	"sync"
	"time"
)

// Debouncer calls its func Delay after the last Trigger, or MaxWait after
// the first Trigger not yet followed by a call, whichever comes first. It is
// safe for concurrent use.
type Debouncer struct {
	delay   time.Duration
	maxWait time.Duration
	fn      func()

	mu      sync.Mutex
	timer   *time.Timer
	first   time.Time // the first trigger not yet followed by a call; zero when none
	due     time.Time // when the pending call is due; zero when none
	stopped bool
	running sync.WaitGroup
}

// New returns a Debouncer that calls fn, on a goroutine of its own, delay
// after the last of a burst of triggers, and at most maxWait after its
// first (no bound when maxWait is not positive). A call that outlasts the
// next burst may overlap the next call: fn serializes itself if it must.
func New(delay, maxWait time.Duration, fn func()) *Debouncer {
	return &Debouncer{delay: delay, maxWait: maxWait, fn: fn}
}

// Signal returns a func for New that sends on c without blocking: give c a
// buffer of one, and a signal not yet received stands for every call since.
func Signal(c chan<- struct{}) func() {
	return func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Trigger schedules a call, postponing a pending one by the delay as long
// as the maximum wait allows. After Stop it does nothing.
func (d *Debouncer) Trigger() { d.TriggerAfter(d.delay) }

// TriggerAfter is Trigger with delay in place of the Debouncer's own, for
// a trigger that says the burst is probably over (a file replaced whole):
// the call is due delay from now, sooner or later than a pending one, and
// a later Trigger postpones it again.
func (d *Debouncer) TriggerAfter(delay time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	now := time.Now()
	if d.first.IsZero() {
		d.first = now
	}
	wait := delay
	if d.maxWait > 0 {
		wait = min(wait, max(0, d.maxWait-now.Sub(d.first)))
	}
	d.due = now.Add(wait)
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, d.fire)
	} else {
		d.timer.Reset(wait)
	}
}

func (d *Debouncer) fire() {
	d.mu.Lock()
	// A timer re-armed after it expired runs fire twice: the early run
	// finds the call not yet due and leaves it to the later one.
	if d.stopped || d.due.IsZero() || time.Now().Before(d.due) {
		d.mu.Unlock()
		return
	}
	d.first, d.due = time.Time{}, time.Time{}
	d.running.Add(1)
	d.mu.Unlock()
	defer d.running.Done()
	d.fn()
}

// Stop cancels a pending call and waits for a call in progress to return;
// no call starts after it. Calling it from the func deadlocks.
func (d *Debouncer) Stop() {
	d.mu.Lock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.first, d.due = time.Time{}, time.Time{}
	d.mu.Unlock()
	d.running.Wait()
}
