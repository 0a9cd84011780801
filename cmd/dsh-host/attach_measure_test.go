package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestMeasureAttachedCall times `dsh-host call` on a one-server
// composition, attached to a running host and standalone (--no-attach),
// alternating the two, and logs the medians and their ratio:
//
//	DSH_MEASURE=1 go test -run TestMeasureAttachedCall -v ./cmd/dsh-host/
//
// DSH_MEASURE_N sets the number of calls of each kind (default 30). The
// server is the in-repo fixture, and npm's server-everything when
// DSH_TEST_NODE_MODULES has it.
func TestMeasureAttachedCall(t *testing.T) {
	if os.Getenv("DSH_MEASURE") == "" {
		t.Skip("a measurement, not a test: set DSH_MEASURE=1")
	}
	n := 30
	if v, err := strconv.Atoi(os.Getenv("DSH_MEASURE_N")); err == nil && v > 0 {
		n = v
	}
	t.Run("fixture", func(t *testing.T) {
		marker := fmt.Sprintf("dsh-measure-%d-%d", os.Getpid(), time.Now().UnixNano())
		t.Cleanup(func() {
			if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
				t.Errorf("server processes left behind: %v", pids)
			}
		})
		measureAttachedCall(t, n, mcptest.FixtureBinary(t), []string{"-name", marker}, "mcp__demo__ping", `{}`, "pong\n")
	})
	t.Run("server-everything", func(t *testing.T) {
		node, argv := mcptest.NodeServer(t, mcptest.ServerEverything, "stdio")
		measureAttachedCall(t, n, node, argv, "mcp__demo__echo", `{"message":"hi"}`, "Echo: hi\n")
	})
}

func measureAttachedCall(t *testing.T, n int, command string, args []string, tool, toolArgs, want string) {
	home := attachHome(t)
	file := filepath.Join(t.TempDir(), "composition.yml")
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	text := fmt.Sprintf("plugins:\n  - id: demo\n    name: mcp-client\n    config: {serverName: demo, transport: stdio, command: %q, args: [%s]}\n", command, strings.Join(quoted, ", "))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	startHostIn(t, home, file)
	var attached, standalone []time.Duration
	for i := 0; i < n; i++ {
		for _, noAttach := range []bool{false, true} {
			args := []string{"call", "-c", file, tool, toolArgs}
			if noAttach {
				args = append(args, "--no-attach")
			}
			begin := time.Now()
			code, out, errs := cliIn(t, home, args...)
			took := time.Since(begin)
			if code != exitOK || out != want {
				t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
			}
			if noAttach {
				standalone = append(standalone, took)
			} else {
				attached = append(attached, took)
			}
		}
	}
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	ma, ms := median(attached), median(standalone)
	t.Logf("dsh-host call %s, median of %d each: attached %v, standalone %v; standalone/attached = %.1fx", tool, n, ma.Round(10*time.Microsecond), ms.Round(10*time.Microsecond), float64(ms)/float64(ma))
}
