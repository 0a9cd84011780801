package mcpclient_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/tools"
)

// catalogFiles returns the catalog cache files under $DSH_HOME.
func catalogFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(os.Getenv("DSH_HOME"), mcpclient.CatalogDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// warmCatalog runs entry eagerly once, so that its discovery writes the
// catalog cache, and returns the cache file.
func warmCatalog(t *testing.T, hs *harness, entry host.Entry) string {
	t.Helper()
	before := catalogFiles(t)
	hs.apply(entry)
	hs.requireActive(entry.ID)
	hs.apply() // disposed: its process is gone
	for _, f := range catalogFiles(t) {
		if !strings.Contains(strings.Join(before, "\n"), f) {
			return f
		}
	}
	t.Fatalf("no catalog cache written; files: %v", catalogFiles(t))
	return ""
}

func withConfig(e host.Entry, extra map[string]any) host.Entry {
	cfg := map[string]any{}
	for k, v := range e.Config {
		cfg[k] = v
	}
	for k, v := range extra {
		cfg[k] = v
	}
	e.Config = cfg
	return e
}

// countLinesIn counts the lines of a file that may not exist yet.
func countLinesIn(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestLazyStartAndIdle: a lazy server with a warm catalog cache has its
// tools listed and no process before its first call; concurrent first
// calls start it once; unused for idleTimeoutMs it stops, its tools
// staying; the next call starts it again.
func TestLazyStartAndIdle(t *testing.T) {
	hs := newHarness(t)
	fixture := mcptest.FixtureBinary(t)
	starts := filepath.Join(t.TempDir(), "starts")
	events := filepath.Join(t.TempDir(), "events")
	eager := stdioFixture(t, "lz", "lz", nil, "-starts-file", starts, "-cancel-file", events)
	warmCatalog(t, hs, eager)
	if n := countLinesIn(t, starts); n != 1 {
		t.Fatalf("%d starts while warming the cache, want 1", n)
	}
	if pids := mcptest.ChildProcesses(t, fixture); len(pids) != 0 {
		t.Fatalf("fixture processes after the eager run was disposed: %v", pids)
	}

	hs.apply(withConfig(eager, map[string]any{"startup": "lazy", "idleTimeoutMs": 200}))
	hs.requireActive("lz")
	want := publicNames("lz", fixtureRawTools...)
	if diff := cmp.Diff(want, hs.serverTools("lz")); diff != "" {
		t.Fatalf("tools of the lazy server before any call (-want +got):\n%s", diff)
	}
	if pids := mcptest.ChildProcesses(t, fixture); len(pids) != 0 {
		t.Fatalf("a lazy server runs before its first call: %v", pids)
	}
	if got, wantDetail := hs.status("lz").Detail, "lazy, idle (12 tools cached)"; got != wantDetail {
		t.Errorf("detail = %q, want %q", got, wantDetail)
	}

	// Concurrent first calls start it once.
	var wg sync.WaitGroup
	results := make([]tools.Result, 4)
	for i := range results {
		wg.Go(func() { results[i] = hs.call(modelCaller, mcpclient.PublicToolName("lz", "ping"), nil) })
	}
	wg.Wait()
	for i, res := range results {
		if res.Err != nil || text(res) != "pong" {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
	if n := countLinesIn(t, starts); n != 2 {
		t.Fatalf("%d starts after concurrent first calls, want 2 (the warm-up and one)", n)
	}

	// A call in flight keeps it running, past idleTimeoutMs: exactly one
	// process.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan tools.Result, 1)
	go func() { done <- hs.callCtx(ctx, modelCaller, mcpclient.PublicToolName("lz", "slow"), map[string]any{"ms": 60000}) }()
	eventually(t, "the slow call in flight", func() bool { return countLinesIn(t, events) == 1 })
	if pids := mcptest.ChildProcesses(t, fixture); len(pids) != 1 {
		t.Errorf("%d fixture processes during a call, want 1: %v", len(pids), pids)
	}
	cancel()
	<-done

	// Unused, it stops; its tools stay.
	eventually(t, "the idle stop", func() bool {
		return len(mcptest.ChildProcesses(t, fixture)) == 0 && hs.status("lz").Detail == "stopped after idle (12 tools)"
	})
	if diff := cmp.Diff(want, hs.serverTools("lz")); diff != "" {
		t.Fatalf("tools after the idle stop (-want +got):\n%s", diff)
	}

	// The next call starts it again.
	if res := hs.call(modelCaller, mcpclient.PublicToolName("lz", "shout"), map[string]any{"text": "again"}); res.Err != nil || text(res) != "AGAIN" {
		t.Fatalf("call after the idle stop: %+v", res)
	}
	if n := countLinesIn(t, starts); n != 3 {
		t.Errorf("%d starts, want 3", n)
	}
	if diff := cmp.Diff(want, hs.serverTools("lz")); diff != "" {
		t.Errorf("tools after the restart (-want +got):\n%s", diff)
	}
}

// TestLazyWithoutCacheConnectsInTheBackground: with no catalog cache yet,
// a lazy server connects at once without holding up its Apply, and its
// tools come when discovered; the discovery writes the cache.
func TestLazyWithoutCacheConnectsInTheBackground(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "nc", "nc", map[string]any{"startup": "lazy"}))
	hs.requireActive("nc")
	want := publicNames("nc", fixtureRawTools...)
	eventually(t, "the tools of the background connection", func() bool {
		return cmp.Equal(want, hs.serverTools("nc")) && hs.status("nc").Detail == "connected, 12 tools"
	})
	if files := catalogFiles(t); len(files) != 1 {
		t.Errorf("catalog files = %v, want one", files)
	}
}

// TestCatalogCache: the cache is keyed by the launch (an env value change
// is another key), holds no env or header value, drops a tool the live
// server no longer lists (a call to it says so), and a corrupt file is
// ignored and rewritten.
func TestCatalogCache(t *testing.T) {
	hs := newHarness(t)
	const secret = "s3cr3t-value-for-the-cache-test"
	entry := stdioFixture(t, "cc", "cc", map[string]any{"env": map[string]any{"FIXTURE_TOKEN": secret}})
	file := warmCatalog(t, hs, entry)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || strings.Contains(string(b), "FIXTURE_TOKEN") || strings.Contains(string(b), mcptest.FixtureBinary(t)) {
		t.Errorf("the cache file holds the launch:\n%s", b)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode: %v, %v", info.Mode(), err)
	}

	t.Run("an env value change is another key", func(t *testing.T) {
		other := withConfig(entry, map[string]any{"env": map[string]any{"FIXTURE_TOKEN": secret + "-rotated"}})
		if got := warmCatalog(t, hs, other); got == file {
			t.Fatalf("the same cache file %s for another env value", got)
		}
	})

	t.Run("a stale tool is removed after discovery", func(t *testing.T) {
		var cat map[string]any
		if err := json.Unmarshal(b, &cat); err != nil {
			t.Fatal(err)
		}
		cat["tools"] = append(cat["tools"].([]any), map[string]any{
			"name": "gone", "description": "A tool the server dropped.", "inputSchema": map[string]any{"type": "object"},
		})
		stale, err := json.Marshal(cat)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, stale, 0o600); err != nil {
			t.Fatal(err)
		}
		hs.apply(withConfig(entry, map[string]any{"startup": "lazy"}))
		gone := mcpclient.PublicToolName("cc", "gone")
		if names := hs.serverTools("cc"); !strings.Contains(strings.Join(names, " "), gone) {
			t.Fatalf("the cached tool is not registered: %v", names)
		}
		res := hs.call(modelCaller, gone, nil)
		if res.Err == nil || !strings.Contains(text(res), `tool "gone" is not in the server's current tool list`) {
			t.Errorf("call to the stale tool: %q", text(res))
		}
		if diff := cmp.Diff(publicNames("cc", fixtureRawTools...), hs.serverTools("cc")); diff != "" {
			t.Errorf("tools after discovery (-want +got):\n%s", diff)
		}
		eventually(t, "the cache rewritten without it", func() bool {
			b, err := os.ReadFile(file)
			return err == nil && !strings.Contains(string(b), `"gone"`)
		})
		hs.apply()
	})

	t.Run("a corrupt cache is ignored and rewritten", func(t *testing.T) {
		if err := os.WriteFile(file, []byte(`{"version":1,"tools":[{"name":`), 0o600); err != nil {
			t.Fatal(err)
		}
		hs.apply(withConfig(entry, map[string]any{"startup": "lazy"}))
		hs.requireActive("cc")
		eventually(t, "the cache rewritten", func() bool {
			got, err := os.ReadFile(file)
			return err == nil && json.Valid(got) && strings.Contains(string(got), `"ping"`)
		})
		if !strings.Contains(hs.logs.String(), "catalog cache ignored") {
			t.Errorf("the corrupt cache was not logged")
		}
		eventually(t, "the tools of the background connection", func() bool {
			return cmp.Equal(publicNames("cc", fixtureRawTools...), hs.serverTools("cc"))
		})
	})
}
