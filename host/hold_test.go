package host

import (
	"strings"
	"sync/atomic"
	"testing"
)

// releaseHold is the done of the readiness hold test-holds-ready takes.
var releaseHold atomic.Pointer[func()]

func init() {
	Register(Definition[struct{}]{
		Name: "test-holds-ready",
		Apply: func(s *Scope, _ struct{}) error {
			done := s.HoldReadiness("retrying its first connection")
			releaseHold.Store(&done)
			return nil
		},
	})
}

// TestHoldReadinessKeepsTheFirstReadinessBack: an instance active but
// holding readiness (an eager server retrying its first connection) keeps
// Readiness false, with its entry and reason, and WaitReadiness waiting;
// done ends both.
func TestHoldReadinessKeepsTheFirstReadinessBack(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, "plugins:\n  - id: r\n    name: test-holds-ready\n")
	s := scopes(h)["r"]
	if ready, why := s.Readiness(); ready || !strings.Contains(why, "entry r: retrying its first connection") {
		t.Errorf("Readiness while r holds it: %v %q, want false naming r and its reason", ready, why)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.WaitReadiness(waitCtx(t)) }()
	(*releaseHold.Load())()
	if err := <-waited; err != nil {
		t.Errorf("WaitReadiness once the hold is released: %v", err)
	}
	if ready, why := s.Readiness(); !ready {
		t.Errorf("Readiness once the hold is released: false (%q)", why)
	}
	(*releaseHold.Load())() // idempotent
}

// TestHoldReadinessEndsWithItsScope: a hold its instance never released
// ends when the instance is disposed.
func TestHoldReadinessEndsWithItsScope(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, "plugins:\n  - id: r\n    name: test-holds-ready\n")
	s := scopes(h)["r"]
	apply(t, h, "plugins: []\n")
	h.mu.Lock()
	holds := s.holds
	h.mu.Unlock()
	if holds != 0 {
		t.Errorf("holds of r's disposed run: %d, want 0", holds)
	}
}
