package addserver_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/dsh-host/dsh-host/internal/sandbox"

	_ "github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/policy"
	_ "github.com/dsh-host/dsh-host/services/settings"
	_ "github.com/dsh-host/dsh-host/services/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestMain runs the tests with a DSH_HOME of their own: the pins add
// writes live there.
func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	home, err := os.MkdirTemp("", "addserver-test-home-")
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
