package leaktest_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/testkit/leaktest"
)

// fakeM is a package's tests: Run starts a goroutine that ends on its own
// after Run returned, once release is closed.
type fakeM struct {
	code    int
	release chan struct{}
	ended   chan struct{}
}

func (f *fakeM) Run() int {
	go func() {
		defer close(f.ended)
		<-f.release
	}()
	return f.code
}

// TestWaitsForGoroutinesEnding: a goroutine left running by the tests and
// ending a second later (past goleak's own retries) is waited for, and the
// check then finds nothing.
func TestWaitsForGoroutinesEnding(t *testing.T) {
	f := &fakeM{release: make(chan struct{}), ended: make(chan struct{})}
	late := time.AfterFunc(time.Second, func() { close(f.release) })
	defer late.Stop()
	if code := leaktest.M(f).Run(); code != 0 {
		t.Fatalf("Run = %d, want the tests' 0", code)
	}
	select {
	case <-f.ended:
	default:
		t.Fatal("Run returned while the tests' goroutine was still running")
	}
	if err := goleak.Find(); err != nil {
		t.Error(err)
	}
}
