package mcptest

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ChildProcesses returns the pids of the live (not zombie) direct children of
// this test process whose executable is exe, sorted. Tests use it to prove
// that a host never runs two server processes for one instance and leaves
// none behind. It reads /proc, so it skips the test on systems without it.
func ChildProcesses(t testing.TB, exe string) []int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("mcptest: ChildProcesses reads /proc (Linux only)")
	}
	want, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone already
		}
		// The fields after the parenthesized command: state, ppid, ...
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != self {
			continue
		}
		if got, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || got != want {
			continue
		}
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}
