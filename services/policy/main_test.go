package policy_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

// TestMain runs the tests with a DSH_HOME of their own: DefaultConfig's
// pins and audit live there, and pins another run (another checkout's
// tools) left in ~/.dsh would hold the test tools.
func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	home, err := os.MkdirTemp("", "policy-test-home-")
	if err == nil {
		err = os.Setenv("DSH_HOME", home)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if code == 0 {
		if err := leaks.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind: %v\n", err)
			code = 1
		}
	}
	os.RemoveAll(home)
	os.Exit(code)
}
