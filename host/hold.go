package host

import "fmt"

// HoldReadiness keeps the host's first readiness (Scope.Readiness) back on
// behalf of s's instance until done is called, or s is disposed: an eager
// MCP server whose first connection failed holds it while it retries,
// within its startup bound, so that a gateway does not say ready without
// a server that comes a moment later. why is the reason Readiness gives
// ("fx: the first connection failed (...); retrying"). done is
// idempotent and safe from any goroutine. The plugin bounds the hold: a
// server that never comes must not keep a replica out of its load
// balancer. On a scope of no host it holds nothing.
func (s *Scope) HoldReadiness(why string) (done func()) {
	if s.inst == nil {
		return func() {}
	}
	h := s.inst.host
	h.mu.Lock()
	s.holds++
	s.holdWhy = why
	h.touchLocked()
	h.mu.Unlock()
	return s.Effect("readiness hold", func() {
		h.mu.Lock()
		s.holds--
		h.touchLocked() // wakes WaitReadiness
		h.mu.Unlock()
	})
}

// heldLocked says why in's current run holds readiness back, if it does.
func (in *instance) heldLocked() (string, bool) {
	s := in.scope
	if s == nil || s.holds == 0 {
		return "", false
	}
	return fmt.Sprintf("entry %s: %s", in.entry.ID, s.holdWhy), true
}
