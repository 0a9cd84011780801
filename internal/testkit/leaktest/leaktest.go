// Package leaktest lets a package's goroutines settle before goleak looks
// for leaks at the end of its tests.
//
// goleak.VerifyTestMain retries for about 0.4 s (20 tries, backing off to
// 100 ms). Goroutines that end on their own once a test returned (an HTTP
// client's idle connection reading the EOF of a closed server, an
// abandoned disposer released at cleanup, a child process's waiter) can
// take longer than that on a loaded machine, and the run fails on what was
// not a leak. M waits for them, bounded by Settle; a goroutine that is
// still there after it is reported by goleak as before.
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(leaktest.M(m)) }
package leaktest

import (
	"time"

	"go.uber.org/goleak"
)

// Settle bounds the wait for goroutines to end after the tests passed: a
// leak is reported at most this much later, never missed.
const Settle = 30 * time.Second

// M wraps m for goleak.VerifyTestMain: Run runs the tests and, when they
// passed, waits until goleak finds no goroutine but those opts ignore,
// at most Settle. Pass M the options given to VerifyTestMain, but
// goleak.Cleanup (goleak.Find refuses it).
func M(m goleak.TestingM, opts ...goleak.Option) goleak.TestingM {
	return settling{m, opts}
}

type settling struct {
	m    goleak.TestingM
	opts []goleak.Option
}

func (s settling) Run() int {
	code := s.m.Run()
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(Settle)
	// Each Find retries for ~0.4 s itself: this loop only goes on past
	// that while something is left.
	for time.Now().Before(deadline) {
		if goleak.Find(s.opts...) == nil {
			break
		}
	}
	return code
}
