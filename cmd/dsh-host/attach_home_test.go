package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestStatusUnderAnotherHome: `status -c F` run with another DSH_HOME than
// the running host of F reaches that host, says under which DSH_HOME it
// runs, and starts no second copy of its server (the fixture records
// each start) (issue 44).
func TestStatusUnderAnotherHome(t *testing.T) {
	runtime, err := os.MkdirTemp("", "dshx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runtime) })
	t.Setenv("XDG_RUNTIME_DIR", runtime) // the index of running hosts
	homeA, homeB := attachHome(t), attachHome(t)
	marker := fmt.Sprintf("dsh-homes-%d-%d", os.Getpid(), time.Now().UnixNano())
	events := t.TempDir()
	starts := filepath.Join(events, "starts")
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
      args: [-starts-file, %q, -name, %q]
      sandbox: {write: [%q]}
`, mcptest.FixtureBinary(t), starts, marker, events))
	t.Cleanup(func() {
		if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	})
	run, _ := startHostIn(t, homeA, file)

	code, out, errs := cliIn(t, homeB, "status", "-c", file)
	if code != exitOK || !strings.Contains(errs, attachedTo(run)+file) || !strings.Contains(errs, "that host runs under DSH_HOME="+homeA) {
		t.Errorf("status under another DSH_HOME: exit %d, stderr %q; want it attached to pid %d under %s", code, errs, run.Process.Pid, homeA)
	}
	if !strings.Contains(out, "demo") {
		t.Errorf("status shows no server:\n%s", out)
	}
	if got := startsOf(t, starts); got != 1 {
		t.Errorf("the server started %d times, want once (the running host's)", got)
	}
	if pids := mcptest.ProcessesWith(t, marker); len(pids) != 1 {
		t.Errorf("server processes %v, want the running host's one", pids)
	}

	// Under the host's own DSH_HOME, nothing more is said.
	if _, _, errs := cliIn(t, homeA, "status", "-c", file); !strings.Contains(errs, attachedTo(run)) || strings.Contains(errs, "DSH_HOME") {
		t.Errorf("status under the host's DSH_HOME: stderr %q", errs)
	}
}

// startsOf counts the starts the fixture recorded in file.
func startsOf(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "start ")
}
