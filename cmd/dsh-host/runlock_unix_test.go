//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestRunLeavesNoRunFiles: `dsh-host run`, stopped by a real SIGINT or
// SIGTERM, leaves nothing in $DSH_HOME/run: neither the control socket
// nor its lock file.
func TestRunLeavesNoRunFiles(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			file := writeComposition(t, greeterComposition)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd, logs := startRun(t, ctx, nil, "-c", file, "--console", "off")
			home := strings.TrimPrefix(cmd.Env[len(cmd.Env)-1], "DSH_HOME=")
			waitLog(t, logs, "running", msg("running; SIGHUP reloads, SIGINT or SIGTERM stops"))
			run := filepath.Join(home, "run")
			if names := dirNames(t, run); len(names) < 2 {
				t.Fatalf("while running, %s holds %v; want the socket and its lock", run, names)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitLog(t, logs, "the clean shutdown", msg("shut down cleanly"))
			for range logs {
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("run after %s: %v, want exit 0", sig, err)
			}
			if names := dirNames(t, run); len(names) != 0 {
				t.Errorf("after %s, %s still holds %v", sig, run, names)
			}
		})
	}
}

// TestServeLeavesNoRunFiles: so does `dsh-host serve --stdio` stopped by
// SIGINT while its client is still connected.
func TestServeLeavesNoRunFiles(t *testing.T) {
	file := writeComposition(t, greeterComposition)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := command(t, ctx, "serve", "--stdio", "--log-format", "json", "--log-level", "info", "-c", file)
	home := strings.TrimPrefix(cmd.Env[len(cmd.Env)-1], "DSH_HOME=")
	stdin, err := cmd.StdinPipe() // the client stays: only the signal stops it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	logs := startLogging(t, cmd)
	waitLog(t, logs, "serving", msg("serving MCP over stdio"))
	run := filepath.Join(home, "run")
	mcptest.WaitFor(t, 30*time.Second, "the control socket and its lock", func() bool { return len(dirNames(t, run)) >= 2 })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range logs {
	}
	cmd.Wait()
	if names := dirNames(t, run); len(names) != 0 {
		t.Errorf("after SIGINT, %s still holds %v", run, names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Name())
	}
	return out
}
