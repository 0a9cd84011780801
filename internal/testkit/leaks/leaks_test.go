package leaks

import (
	"testing"
	"time"
)

// TestFindWaitsForEndingGoroutines: a goroutine that ends a second after
// the check begins (past goleak's own retries, which report it) is not a
// leak.
func TestFindWaitsForEndingGoroutines(t *testing.T) {
	done := make(chan struct{})
	go func() {
		time.Sleep(time.Second)
		close(done)
	}()
	if err := Find(); err != nil {
		t.Errorf("a goroutine ending within Settle was reported: %v", err)
	}
	<-done
}
