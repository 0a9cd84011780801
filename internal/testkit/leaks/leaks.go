// Package leaks checks, at the end of a test binary, that its tests left
// no goroutine behind, waiting for those still on their way out: goleak's
// own retries last about half a second, which a connection's reader or a
// process's waiter, ending with its test on a loaded machine, can outlast.
package leaks

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Settle bounds the wait for goroutines to end. Only a binary that leaks
// waits it out.
const Settle = 30 * time.Second

// Find returns goleak's report of the goroutines left (nil: none), once
// none is left or Settle has passed.
func Find(opts ...goleak.Option) error {
	deadline := time.Now().Add(Settle)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// VerifyTestMain is goleak.VerifyTestMain with Find's wait: it runs the
// tests and, if they passed, fails the binary on goroutines left.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		if err := Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
