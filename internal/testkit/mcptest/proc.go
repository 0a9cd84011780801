package mcptest

import (
	"bytes"
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
	want, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	self := os.Getpid()
	return liveProcesses(t, "ChildProcesses", func(pid string, ppid int) bool {
		if ppid != self {
			return false
		}
		got, err := os.Readlink(filepath.Join("/proc", pid, "exe"))
		return err == nil && got == want
	})
}

// ProcessesWith returns the pids of the live (not zombie) processes, other
// than this test process, whose command line contains marker, sorted. It
// finds the servers a host started from a child process (a built dsh-host
// binary, say), which are this process's grandchildren and so escape
// ChildProcesses: give each server an argument unique to the test (a temp
// path, a name with the pid in it) and pass that as marker. It reads /proc,
// so it skips the test on systems without it.
func ProcessesWith(t testing.TB, marker string) []int {
	t.Helper()
	if marker == "" {
		t.Fatal("mcptest: ProcessesWith needs a non-empty marker")
	}
	self := os.Getpid()
	return liveProcesses(t, "ProcessesWith", func(pid string, _ int) bool {
		if pid == strconv.Itoa(self) {
			return false
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		return err == nil && bytes.Contains(cmdline, []byte(marker))
	})
}

// liveProcesses returns the pids of the processes that are neither zombies
// nor dead and for which keep, given the pid's /proc name and the parent's
// pid, is true, sorted. name is the exported helper, for messages.
func liveProcesses(t testing.TB, name string, keep func(pid string, ppid int) bool) []int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("mcptest: %s reads /proc (Linux only)", name)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
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
		ppid, _ := strconv.Atoi(f[1])
		if keep(e.Name(), ppid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}
