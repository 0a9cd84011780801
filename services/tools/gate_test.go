package tools_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestOnGate: with no gate every door is open; a gate's refusal is
// Gate's; a gate that panics refuses (it could not decide); a disposed
// gate's scope takes it away.
func TestOnGate(t *testing.T) {
	r := tools.New(nil)
	if err := r.Gate(testCaller, "fx", tools.KindResources); err != nil {
		t.Fatalf("no gate: %v, want open", err)
	}
	s := newScope(t, "gate")
	r.OnGate(s, func(_ tools.Caller, server, kind string) error {
		switch server {
		case "closed":
			return errors.New("closed by rule 1")
		case "broken":
			panic("the policy is broken")
		}
		return nil
	})
	if err := r.Gate(testCaller, "fx", tools.KindPrompts); err != nil {
		t.Errorf("fx: %v, want open", err)
	}
	if err := r.Gate(testCaller, "closed", tools.KindPrompts); err == nil || err.Error() != "closed by rule 1" {
		t.Errorf("closed: %v, want the gate's refusal", err)
	}
	if err := r.Gate(testCaller, "broken", tools.KindResources); err == nil || !strings.Contains(err.Error(), "cannot be checked") {
		t.Errorf("a gate that panics: %v, want a refusal", err)
	}
	if err := s.Dispose(0); err != nil {
		t.Fatal(err)
	}
	if err := r.Gate(testCaller, "closed", tools.KindPrompts); err != nil {
		t.Errorf("after the gate's scope is disposed: %v, want open", err)
	}
}
