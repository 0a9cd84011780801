package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestReloadKeepsAWorkingServer: an mcp-client entry whose command is
// edited to one that does not exist keeps its old server (same process,
// still answering), and reload and status say so and why; once the file
// is fixed, the new server takes over.
func TestReloadKeepsAWorkingServer(t *testing.T) {
	home := attachHome(t)
	dir := t.TempDir()
	marker := fmt.Sprintf("dsh-keep-%d-%d", os.Getpid(), time.Now().UnixNano())
	fixture := mcptest.FixtureBinary(t)
	file := filepath.Join(dir, "composition.yml")
	write := func(command string, extra ...string) {
		t.Helper()
		args := append([]string{"-counter", "-name", marker}, extra...)
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		yaml := fmt.Sprintf("plugins:\n  - id: demo\n    name: mcp-client\n    config:\n      serverName: demo\n      transport: stdio\n      command: %q\n      args: [%s]\n", command, strings.Join(quoted, ", "))
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	write(fixture)
	t.Cleanup(func() {
		if pids := mcptest.ProcessesWith(t, marker); len(pids) > 0 {
			t.Errorf("server processes left behind: %v", pids)
		}
	})
	startHostIn(t, home, file)
	count := func() string {
		t.Helper()
		code, out, errs := cliIn(t, home, "call", "-c", file, "mcp__demo__count")
		if code != exitOK {
			t.Fatalf("call: exit %d, stderr %q", code, errs)
		}
		return strings.TrimSpace(out)
	}
	if got := count(); got != "1" {
		t.Fatalf("first count %q, want 1", got)
	}
	before := mcptest.ProcessesWith(t, marker)
	if len(before) != 1 {
		t.Fatalf("server processes %v, want one", before)
	}

	missing := filepath.Join(dir, "no-such-server")
	write(missing)
	code, out, errs := cliIn(t, home, "reload", "-c", file)
	if code != exitFail || !strings.Contains(out, "demo: kept (kept the previous config: the new one failed: ") || !strings.Contains(out, "no-such-server") {
		t.Errorf("reload of a broken command: exit %d, want 1 and kept with the reason\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if _, out, _ := cliIn(t, home, "status", "-c", file); !strings.Contains(out, "kept the previous config: the new one failed: ") {
		t.Errorf("status does not say the previous config is kept:\n%s", out)
	}
	// Scripts read the same with status --json, under stable field names.
	_, out, _ = cliIn(t, home, "status", "-c", file, "--json")
	var doc struct {
		Instances []struct {
			ID, Plugin, State, Detail, Kept string
		} `json:"instances"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if i := slices.IndexFunc(doc.Instances, func(in struct{ ID, Plugin, State, Detail, Kept string }) bool { return in.ID == "demo" }); i < 0 ||
		doc.Instances[i].Plugin != "mcp-client" || doc.Instances[i].State != "active" || doc.Instances[i].Detail == "" ||
		!strings.HasPrefix(doc.Instances[i].Kept, "kept the previous config: the new one failed: ") {
		t.Errorf("status --json lacks demo active with detail and kept:\n%s", out)
	}
	if got := count(); got != "2" {
		t.Errorf("count after the broken edit %q, want 2 (the same server)", got)
	}
	if now := mcptest.ProcessesWith(t, marker); !slices.Equal(now, before) {
		t.Errorf("server processes %v after the broken edit, want %v untouched", now, before)
	}

	// The watcher may apply the fix before reload asks: then reload finds
	// nothing to change. Either way nothing is kept.
	write(fixture, "-progress")
	code, out, errs = cliIn(t, home, "reload", "-c", file)
	if code != exitOK || strings.Contains(out, "kept") {
		t.Errorf("reload of the fixed file: exit %d, want 0, nothing kept\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if got := count(); got != "1" {
		t.Errorf("count after the fix %q, want 1 (a new server)", got)
	}
	mcptest.WaitFor(t, time.Minute, "the old server to stop", func() bool {
		now := mcptest.ProcessesWith(t, marker)
		return len(now) == 1 && now[0] != before[0]
	})
	if _, out, _ := cliIn(t, home, "status", "-c", file); strings.Contains(out, "kept the previous config") {
		t.Errorf("status still says kept after the fix:\n%s", out)
	}
}
