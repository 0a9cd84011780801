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
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
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

	hs.apply(withConfig(eager, map[string]any{"startup": "lazy", "idleTimeoutMs": 1000}))
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
	// The same, typed for a front end, and the tools' owner by name.
	st := hs.status("lz")
	wantClaims := []host.Claim{{Kind: "serverName", Value: "lz", Key: "serverName", ToolPrefix: "mcp__lz__"}}
	if !st.Lazy || !st.Dormant || !cmp.Equal(st.Claims, wantClaims) {
		t.Errorf("status Lazy %v, Dormant %v, Claims %+v; want lazy, dormant, %+v", st.Lazy, st.Dormant, st.Claims, wantClaims)
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
	// process. (The status is read during the call: after the first calls
	// alone, a test slower than idleTimeoutMs would find it stopped.)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan tools.Result, 1)
	go func() {
		done <- hs.callCtx(ctx, modelCaller, mcpclient.PublicToolName("lz", "slow"), map[string]any{"ms": 60000})
	}()
	eventually(t, "the slow call in flight", func() bool { return countLinesIn(t, events) == 1 })
	if pids := mcptest.ChildProcesses(t, fixture); len(pids) != 1 {
		t.Errorf("%d fixture processes during a call, want 1: %v", len(pids), pids)
	}
	if st := hs.status("lz"); st.Dormant || !st.Lazy {
		t.Errorf("during a call: Dormant %v, Lazy %v; want awake, still lazy", st.Dormant, st.Lazy)
	}
	cancel()
	<-done

	// Unused, it stops; its tools stay.
	eventually(t, "the idle stop", func() bool {
		return len(mcptest.ChildProcesses(t, fixture)) == 0 && hs.status("lz").Detail == "stopped after idle (12 tools)"
	})
	if !hs.status("lz").Dormant {
		t.Error("stopped after idle, yet not Dormant")
	}
	if diff := cmp.Diff(want, hs.serverTools("lz")); diff != "" {
		t.Fatalf("tools after the idle stop (-want +got):\n%s", diff)
	}

	// The next call starts it again.
	before := countLinesIn(t, starts)
	if res := hs.call(modelCaller, mcpclient.PublicToolName("lz", "shout"), map[string]any{"text": "again"}); res.Err != nil || text(res) != "AGAIN" {
		t.Fatalf("call after the idle stop: %+v", res)
	}
	if n := countLinesIn(t, starts); n != before+1 {
		t.Errorf("%d starts after %d, want one more", n, before)
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
		return cmp.Equal(want, hs.serverTools("nc")) && strings.HasPrefix(hs.status("nc").Detail, "connected, 12 tools, ")
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

// TestEagerPastStartupTimeout: an eager server slower than its
// startupTimeoutMs does not hold up the others: the host is ready with
// theirs, and its tools come when it does; with a catalog cache they are
// there at once, and a call made before it answers says why it failed.
func TestEagerPastStartupTimeout(t *testing.T) {
	hs := newHarness(t)
	release := filepath.Join(t.TempDir(), "release")
	fast := stdioFixture(t, "fast", "fast", nil)
	slow := stdioFixture(t, "slow", "slow", map[string]any{"startupTimeoutMs": 300}, "-wait-file", release)
	hs.apply(fast, slow)
	hs.requireActive("fast")
	hs.requireActive("slow")
	if diff := cmp.Diff(publicNames("fast", fixtureRawTools...), hs.serverTools("fast")); diff != "" {
		t.Errorf("tools of the fast server (-want +got):\n%s", diff)
	}
	if got := hs.serverTools("slow"); len(got) != 0 {
		t.Errorf("the slow server has tools before it answered: %v", got)
	}
	if got, want := hs.status("slow").Detail, "starting: no answer within startupTimeoutMs (300ms); still trying in the background"; got != want {
		t.Errorf("detail = %q, want %q", got, want)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slow server's tools", func() bool {
		return cmp.Equal(publicNames("slow", fixtureRawTools...), hs.serverTools("slow")) && strings.HasPrefix(hs.status("slow").Detail, "connected, 12 tools, ")
	})

	// Again with its catalog cache: the tools are there at once.
	hs.apply()
	if err := os.Remove(release); err != nil {
		t.Fatal(err)
	}
	hs.apply(fast, slow)
	if diff := cmp.Diff(publicNames("slow", fixtureRawTools...), hs.serverTools("slow")); diff != "" {
		t.Errorf("tools of the slow server from its cache (-want +got):\n%s", diff)
	}
	if got, want := hs.status("slow").Detail, "starting: no answer within startupTimeoutMs (300ms); still trying in the background (12 tools cached)"; got != want {
		t.Errorf("detail = %q, want %q", got, want)
	}
	res := hs.call(modelCaller, mcpclient.PublicToolName("slow", "ping"), nil)
	if res.Err == nil || !strings.Contains(text(res), "the server did not start within startupTimeoutMs (300ms); it goes on starting") {
		t.Errorf("call before the server answered: %q", text(res))
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slow server connected", func() bool { return strings.HasPrefix(hs.status("slow").Detail, "connected, 12 tools, ") })
	if res := hs.call(modelCaller, mcpclient.PublicToolName("slow", "ping"), nil); res.Err != nil || text(res) != "pong" {
		t.Errorf("call after it answered: %+v", res)
	}
}

// TestCatalogPromptIdentical: the prompt, folded by mcp-fold, the
// mcp_list catalog and the tool definitions are byte for byte the same
// whether a server's tools came from the catalog cache or from the live
// server (prompt caches keep hitting).
func TestCatalogPromptIdentical(t *testing.T) {
	hs := newHarness(t)
	fx := stdioFixture(t, "fx", "fx", nil, "-instructions", "Use fx for arithmetic.", "-unusable-tools")
	warmCatalog(t, hs, fx)
	fold := host.Entry{ID: "fold", Name: "mcp-fold", Config: map[string]any{}}
	hs.apply(fold, withConfig(fx, map[string]any{"startup": "lazy"}))
	if d := hs.status("fx").Detail; !strings.HasPrefix(d, "lazy, idle (") {
		t.Fatalf("detail = %q, want lazy and idle", d)
	}
	snapshot := func() (prompt, catalog, defs string) {
		t.Helper()
		a, err := hs.registry().Assemble(t.Context(), modelCaller)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		list := hs.call(modelCaller, "mcp_list", nil)
		if list.Err != nil {
			t.Fatalf("mcp_list: %v", list.Err)
		}
		type def struct {
			Name, Description string
			InputSchema       json.RawMessage
		}
		var ds []def
		for _, d := range hs.registry().List(modelCaller) {
			if d.Origin.Server == "fx" {
				ds = append(ds, def{d.Name, d.Description, d.InputSchema})
			}
		}
		db, err := json.Marshal(ds)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), text(list), string(db)
	}
	prompt1, catalog1, defs1 := snapshot()
	if !strings.Contains(prompt1, "Use fx for arithmetic.") || !strings.Contains(catalog1, "fx__ping") {
		t.Fatalf("the cached prompt lacks the instructions or the catalog the tools:\n%s\n%s", prompt1, catalog1)
	}
	if res := hs.call(modelCaller, mcpclient.PublicToolName("fx", "ping"), nil); res.Err != nil {
		t.Fatalf("ping: %v", res.Err)
	}
	if d := hs.status("fx").Detail; !strings.HasPrefix(d, "connected, ") {
		t.Fatalf("detail after the first call = %q", d)
	}
	prompt2, catalog2, defs2 := snapshot()
	if diff := cmp.Diff(prompt1, prompt2); diff != "" {
		t.Errorf("folded prompt, cache vs live (-cache +live):\n%s", diff)
	}
	if diff := cmp.Diff(catalog1, catalog2); diff != "" {
		t.Errorf("mcp_list, cache vs live (-cache +live):\n%s", diff)
	}
	if diff := cmp.Diff(defs1, defs2); diff != "" {
		t.Errorf("definitions, cache vs live (-cache +live):\n%s", diff)
	}
	t.Logf("folded prompt %d bytes, mcp_list %d bytes, definitions %d bytes: identical", len(prompt1), len(catalog1), len(defs1))
}

func TestStartupConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*mcpclient.Config)
		want string
	}{
		{"unknown startup", func(c *mcpclient.Config) { c.Startup = "later" }, `startup: "later" must be eager or lazy`},
		{"negative idleTimeoutMs", func(c *mcpclient.Config) { c.IdleTimeoutMs = -1 }, "idleTimeoutMs: must be 0"},
		{"lazy and strict", func(c *mcpclient.Config) { c.Startup, c.FailOnStartupError = "lazy", true }, "failOnStartupError: applies to startup eager only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mcpclient.Defaults()
			cfg.ServerName, cfg.Transport, cfg.Command = "x", mcpclient.TransportStdio, "x"
			tc.set(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
	cfg := mcpclient.Defaults()
	cfg.ServerName, cfg.Transport, cfg.Command, cfg.Startup, cfg.IdleTimeoutMs = "x", mcpclient.TransportStdio, "x", "lazy", 60000
	if err := cfg.Validate(); err != nil {
		t.Errorf("a lazy config with idleTimeoutMs: %v", err)
	}
}

// TestLazyStartFailure: a lazy server that fails to start answers the call
// with why, is not retried in the background, and the next call tries
// again.
func TestLazyStartFailure(t *testing.T) {
	hs := newHarness(t)
	crash := filepath.Join(t.TempDir(), "crash")
	starts := filepath.Join(t.TempDir(), "starts")
	entry := stdioFixture(t, "lf", "lf", nil, "-crash-if-exists", crash, "-starts-file", starts)
	warmCatalog(t, hs, entry)
	if err := os.WriteFile(crash, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	hs.apply(withConfig(entry, map[string]any{"startup": "lazy"}))
	ping := mcpclient.PublicToolName("lf", "ping")
	res := hs.call(modelCaller, ping, nil)
	if res.Err == nil || !strings.Contains(text(res), "mcp-client(lf): failed to start: ") || !strings.Contains(text(res), "exit status 1") {
		t.Fatalf("call to a server that cannot start: %q", text(res))
	}
	if d := hs.status("lf").Detail; !strings.HasPrefix(d, "failed to start: ") || !strings.HasSuffix(d, "; the next call tries again") {
		t.Errorf("detail = %q", d)
	}
	if st := hs.status("lf"); st.State != host.StateActive || !strings.Contains(st.LastError, "exit status 1") || !st.Dormant {
		t.Errorf("status %s, LastError %q, Dormant %v; want active, the start's failure, dormant", st.State, st.LastError, st.Dormant)
	}
	if n := countLinesIn(t, starts); n != 2 {
		t.Errorf("%d starts, want 2 (the warm-up and the call's)", n)
	}
	if err := os.Remove(crash); err != nil {
		t.Fatal(err)
	}
	if res := hs.call(modelCaller, ping, nil); res.Err != nil || text(res) != "pong" {
		t.Fatalf("the next call: %+v", res)
	}
	if n := countLinesIn(t, starts); n != 3 {
		t.Errorf("%d starts, want 3", n)
	}
	if st := hs.status("lf"); st.LastError != "" || st.Dormant {
		t.Errorf("connected again: LastError %q, Dormant %v; want both cleared", st.LastError, st.Dormant)
	}
}

// TestDormantLazyServerIsNotWaitedFor: a lazy server started from its
// catalog cache lists its resources and prompts only at its first call, so
// it counts as listed from the start: a gateway's first client, which waits
// for the servers starting with it (WaitListed), does not wait for it.
func TestDormantLazyServerIsNotWaitedFor(t *testing.T) {
	hs := newHarness(t)
	eager := stdioFixture(t, "dz", "dz", nil)
	warmCatalog(t, hs, eager)
	hs.apply(withConfig(eager, map[string]any{"startup": "lazy"}))
	hs.requireActive("dz")
	ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
	defer cancel()
	if err := hs.resources().WaitListed(ctx); err != nil {
		t.Fatalf("WaitListed with only a dormant lazy server: %v", err)
	}
	if pids := mcptest.ChildProcesses(t, mcptest.FixtureBinary(t)); len(pids) != 0 {
		t.Errorf("the lazy server started: %v", pids)
	}
}
