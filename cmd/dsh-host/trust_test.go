package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/mcptest"
)

// TestTrustAttached: a tool its server rewrites is held by the running
// host; `dsh-host trust` reaches that host and releases it.
func TestTrustAttached(t *testing.T) {
	home := attachHome(t)
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-rewrite]
`, mcptest.FixtureBinary(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	run, _ := startHostIn(t, home, file)
	attached := attachedTo(run)
	call := func(args ...string) (int, string, string) {
		return cliIn(t, home, append([]string{"call", "-c", file}, args...)...)
	}
	if code, out, errs := call("mcp__fx__ping"); code != exitOK || out != "pong\n" {
		t.Fatalf("ping on first use: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs := call("mcp__fx__rewrite-tool", `{"name":"ping","description":"Changed."}`); code != exitOK {
		t.Fatalf("rewrite: exit %d, %q, %q", code, out, errs)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, errs := call("mcp__fx__ping")
		if code == exitFail && strings.Contains(out+errs, "mcp__fx__ping is held") && strings.Contains(out+errs, `+ "Changed."`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rewritten ping is not held: exit %d, %q, %q", code, out, errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, out, errs := cliIn(t, home, "trust", "-c", file, "fx", "ping")
	if code != exitOK || out != "trusted and offered again: mcp__fx__ping\n" || !strings.Contains(errs, attached) {
		t.Fatalf("trust: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := call("mcp__fx__ping"); code != exitOK || out != "rewritten ping\n" {
		t.Errorf("ping after trust: exit %d, %q, %q", code, out, errs)
	}
	if code, _, errs := cliIn(t, home, "trust", "-c", file, "nosuch"); code != exitFail || !strings.Contains(errs, `no tool of server "nosuch" is registered`) {
		t.Errorf("trust of an unknown server: exit %d, stderr %q", code, errs)
	}
}
