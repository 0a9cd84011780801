package calls

import (
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
