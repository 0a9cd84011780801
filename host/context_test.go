package host

import (
	"context"
	"sync/atomic"
	"testing"
)

type contextTestKey struct{}

// contextSeen receives the scope context of test-context instances.
// Registered once in init, so the test runs again under -count.
var contextSeen atomic.Pointer[chan context.Context]

func init() {
	Register(Definition[noopConfig]{Name: "test-context", Apply: func(s *Scope, _ noopConfig) error {
		if c := contextSeen.Load(); c != nil {
			*c <- s.Context()
		}
		return nil
	}})
}

// TestOptionsContextReachesScopes: a value of Options.Context is in every
// instance's scope context, and the base's cancellation ends no scope
// (only Shutdown does).
func TestOptionsContextReachesScopes(t *testing.T) {
	seen := make(chan context.Context, 1)
	contextSeen.Store(&seen)
	t.Cleanup(func() { contextSeen.Store(nil) })
	base, cancel := context.WithCancel(context.WithValue(context.Background(), contextTestKey{}, "telemetry"))
	h := newHost(t, &Options{Context: base})
	apply(t, h, "plugins:\n  - {id: a, name: test-context}\n")
	cancel()
	ctx := <-seen
	if got := ctx.Value(contextTestKey{}); got != "telemetry" {
		t.Errorf("scope context value = %v, want the base's", got)
	}
	if ctx.Err() != nil {
		t.Errorf("the base's cancellation ended the scope: %v", ctx.Err())
	}
}
