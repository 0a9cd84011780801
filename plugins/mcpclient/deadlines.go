package mcpclient

// The times a client keeps for its calls: each call's toolCallTimeoutMs
// and toolCallMaxMs, and the release of a finished Streamable HTTP call's
// context (see client.release). They share one runtime timer per client,
// armed for the earliest of them (a release's with its slack:
// releaseBatches).
//
// A runtime timer per call cost more than its bookkeeping: starting a
// timer that becomes the process's earliest wakes the thread the runtime
// keeps waiting in the network poller (an eventfd written and read, and a
// context switch). strace counted that on about a third of the calls made
// through `dsh-host serve --stdio`. These times only ever move later
// (progress, an answered question), and calls start with the same
// timeouts, so the armed timer is left alone on almost every call, and a
// finished call needs nothing: the timer finds it gone.

import (
	"context"
	"slices"
	"sync"
	"time"
)

// alarm runs ring at the earliest time asked of it, on one runtime timer.
// Whoever asks must have made what is due at that time visible to ring
// first: an ask that comes while ring is about to run is skipped when it
// is not earlier than the time ringing.
type alarm struct {
	ring  func()
	mu    sync.Mutex
	timer *time.Timer
	at    time.Time // when the timer fires; zero while nothing is asked
}

// ask makes the alarm ring at at or before it.
func (a *alarm) ask(at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.at.IsZero() && !at.Before(a.at) {
		return
	}
	a.at = at
	if a.timer == nil {
		a.timer = time.AfterFunc(time.Until(at), a.rung)
		return
	}
	a.timer.Reset(time.Until(at))
}

func (a *alarm) rung() {
	a.mu.Lock()
	a.at = time.Time{}
	ring := a.ring
	a.mu.Unlock()
	ring()
}

// pendingRelease is a finished Streamable HTTP call's context, cancelled
// at its time (client.release).
type pendingRelease struct {
	at     time.Time
	cancel context.CancelFunc
}

// onDeadline runs when the client's alarm rings: it cancels the calls
// whose time ran out, releases what is due, and asks the alarm for the
// next time.
func (c *client) onDeadline() {
	now := time.Now()
	var next time.Time
	earliest := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for _, call := range c.callsInFlight() {
		cause, at := call.due(now)
		if cause != nil {
			call.expire(cause)
			continue
		}
		earliest(at)
	}
	c.mu.Lock()
	// Releases are queued in the order of their times (one delay for all).
	n := 0
	for n < len(c.releases) && !now.Before(c.releases[n].at) {
		n++
	}
	// Copied out and deleted in place, so the queue's array holds no
	// finished call's context.
	due := slices.Clone(c.releases[:n])
	c.releases = slices.Delete(c.releases, 0, n)
	if len(c.releases) > 0 {
		earliest(c.releases[0].at.Add(c.releaseSlack()))
	}
	c.mu.Unlock()
	for _, r := range due {
		r.cancel()
	}
	if !next.IsZero() {
		c.deadlines.ask(next)
	}
}

// releaseBatches is how many times, at most, the alarm rings for releases
// in one releaseDelay: a release may come that share of the delay late.
// Under load a call finishes every few hundred microseconds; ringing for
// each release would start a timer goroutine and shift the whole queue per
// call (1.6% of a gateway's CPU at 1,900 calls/s over Streamable HTTP).
const releaseBatches = 10

// releaseSlack is how late a release may come (releaseBatches).
func (c *client) releaseSlack() time.Duration { return c.opt.releaseDelay / releaseBatches }

// releaseAll cancels every queued release at once (dispose); releases
// asked for after c.stop are cancelled by release itself.
func (c *client) releaseAll() {
	c.mu.Lock()
	due := c.releases
	c.releases = nil
	c.mu.Unlock()
	for _, r := range due {
		r.cancel()
	}
}
