package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// A one-shot call of a lazy server's tool with no catalog cache yet starts
// the server, runs the call, and leaves the cache for the next command.
func TestCallStartsALazyServerWithoutCache(t *testing.T) {
	marker := fmt.Sprintf("dsh-lazy-%d-%d", os.Getpid(), time.Now().UnixNano())
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - id: lz
    name: mcp-client
    config:
      serverName: lz
      transport: stdio
      command: %q
      args: [-name, %q]
      startup: lazy
`, mcptest.FixtureBinary(t), marker))
	defer func() {
		if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	}()
	home := t.TempDir()
	run := func(args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := command(t, ctx, args...)
		cmd.Env = append(cmd.Env, "DSH_HOME="+home)
		return runToEnd(t, cmd)
	}
	code, stdout, stderr := run("call", "--no-attach", "-c", file, "mcp__lz__greet", `{"name":"lazy"}`)
	if code != 0 || !strings.Contains(stdout, "Hello, lazy!") {
		t.Fatalf("call on a lazy server without cache: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	entries, err := os.ReadDir(filepath.Join(home, "mcp-catalog"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no catalog cache written by the call (%v)", err)
	}
	code, stdout, _ = run("tools", "--no-attach", "-c", file)
	if code != 0 || !strings.Contains(stdout, "mcp__lz__greet") {
		t.Errorf("tools after the call: exit %d, stdout %q", code, stdout)
	}
}
