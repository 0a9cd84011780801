package mcpclient

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

func echoServer(t *testing.T, names ...string) *fakeServer {
	f := newFakeServer(t, nil)
	for _, n := range names {
		f.addTool(n, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(req.Params.Name + ":" + string(req.Params.Arguments)), nil
		})
	}
	return f
}

func TestRegistersUnderServerQualifiedNames(t *testing.T) {
	srv := echoServer(t, "search", "admin.reset")
	e := mustStart(t, testConfig("gh"), srv)

	want := []string{PublicToolName("gh", "admin.reset"), "mcp__gh__search"}
	if diff := cmp.Diff(want, e.names()); diff != "" {
		t.Fatalf("registered (-want +got):\n%s", diff)
	}
	def, _ := e.reg.Get("mcp__gh__search")
	if def.Description != "tool search" {
		t.Errorf("description = %q", def.Description)
	}
	// Listing is random, one per list: the policy trusts a first list by it.
	if diff := cmp.Diff(tools.Origin{Instance: "inst-gh", Server: "gh", RawName: "search", Listing: def.Origin.Listing}, def.Origin); diff != "" || def.Origin.Listing == 0 {
		t.Errorf("origin (-want +got):\n%s(listing %d)", diff, def.Origin.Listing)
	}
	if got := string(def.InputSchema); got != `{"type":"object"}` {
		t.Errorf("input schema = %s, want it passed through", got)
	}
	// The raw name goes on the wire, for clean and normalized names alike.
	for _, raw := range []string{"search", "admin.reset"} {
		res := e.call(tools.Caller{}, PublicToolName("gh", raw), `{"q":1}`)
		if res.Err != nil || resultText(res) != raw+`:{"q":1}` {
			t.Errorf("call %s = %q, %v", raw, resultText(res), res.Err)
		}
	}
	if got := e.Detail(); got != "connected, 2 tools" {
		t.Errorf("detail = %q", got)
	}
}

// testScope returns a scope called id, disposed when the test ends: the
// owner of a tool registered beside the clients'.
func testScope(t *testing.T, id string) *host.Scope {
	s := host.NewScope(context.Background(), id, discardLogger())
	t.Cleanup(func() {
		if err := s.Dispose(waitTimeout); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestServersAndNativeToolsCoexist(t *testing.T) {
	reg := tools.New(nil)
	unregister, err := reg.Register(testScope(t, "native"), tools.Definition{Name: "search", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		return tools.Output{Value: "native"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	a := mustStart(t, testConfig("github"), echoServer(t, "search"), withRegistry(reg))
	mustStart(t, testConfig("web"), echoServer(t, "search"), withRegistry(reg))
	var names []string
	for _, d := range reg.List(tools.Caller{}) {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"mcp__github__search", "mcp__web__search", "search"}, names); diff != "" {
		t.Errorf("registry (-want +got):\n%s", diff)
	}
	if res := a.call(tools.Caller{}, "mcp__web__search", "{}"); resultText(res) != "search:{}" {
		t.Errorf("web search = %q, %v", resultText(res), res.Err)
	}
}

// TestServerNameClaimed: two enabled entries with one serverName are a
// config error naming both, reported by the host's check before anything
// starts.
func TestServerNameClaimed(t *testing.T) {
	c, err := host.ParseComposition("composition.yml", []byte(`plugins:
  - id: a
    name: mcp-client
    config: {serverName: gh, transport: stdio, command: a}
  - id: b
    name: mcp-client
    config:
      transport: stdio
      serverName: gh
      command: b
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `composition.yml:9: entry "b": config key serverName: serverName "gh" is already claimed by entry "a" (composition.yml:4); each must be unique, or disable one entry`
	if err := host.Check(c); err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %q", err, want)
	}
}

func TestDrainsPagination(t *testing.T) {
	srv := newFakeServer(t, &mcp.ServerOptions{PageSize: 2})
	var want []string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		srv.addTool(n, nil)
		want = append(want, "mcp__p__"+n)
	}
	e := mustStart(t, testConfig("p"), srv)
	if diff := cmp.Diff(want, e.names()); diff != "" {
		t.Errorf("registered (-want +got):\n%s", diff)
	}
}

// listMiddleware lets a test rewrite or fail tools/list on the server.
func listMiddleware(srv *fakeServer, fn func(*mcp.ListToolsResult) error) {
	srv.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err == nil && method == "tools/list" {
				if err := fn(res.(*mcp.ListToolsResult)); err != nil {
					return nil, err
				}
			}
			return res, err
		}
	})
}

func TestInvalidListRejected(t *testing.T) {
	t.Run("at startup", func(t *testing.T) {
		srv := echoServer(t, "a", "b")
		listMiddleware(srv, func(r *mcp.ListToolsResult) error { r.Tools = append(r.Tools, r.Tools[0]); return nil })
		cfg := testConfig("dup")
		cfg.FailOnStartupError = true
		_, err := startEnv(t, cfg, srv)
		if err == nil || !strings.Contains(err.Error(), `server listed tool "a" more than once — invalid tool list`) ||
			!strings.Contains(err.Error(), "initial connection or tool synchronization failed") {
			t.Fatalf("start = %v", err)
		}
	})
	t.Run("on re-sync the previous generation stays", func(t *testing.T) {
		srv := echoServer(t, "a", "b")
		var dup atomic.Bool
		listMiddleware(srv, func(r *mcp.ListToolsResult) error {
			if dup.Load() {
				r.Tools = append(r.Tools, r.Tools[1])
			}
			return nil
		})
		e := mustStart(t, testConfig("dup"), srv)
		dup.Store(true)
		srv.addTool("c", nil) // sends list_changed
		eventually(t, "the re-sync failure", func() bool { return e.logs.Has(slog.LevelError, "tool re-sync failed") })
		if diff := cmp.Diff([]string{"mcp__dup__a", "mcp__dup__b"}, e.names()); diff != "" {
			t.Errorf("registered (-want +got):\n%s", diff)
		}
	})
}

func TestResync(t *testing.T) {
	srv := echoServer(t, "a", "b")
	var fail atomic.Bool
	listMiddleware(srv, func(*mcp.ListToolsResult) error {
		if fail.Load() {
			return errors.New("list unavailable")
		}
		return nil
	})
	e := mustStart(t, testConfig("rs"), srv)

	// list_changed: the new generation replaces the old one (b removed, c added).
	srv.srv.RemoveTools("b")
	srv.addTool("c", nil)
	eventually(t, "the re-sync", func() bool { return slices.Equal(e.names(), []string{"mcp__rs__a", "mcp__rs__c"}) })
	if !e.logs.Has(slog.LevelInfo, "mcp-client(rs): tool list changed, re-syncing") {
		t.Error("no re-sync log")
	}
	// The old generation, released early, left nothing on the scope.
	toolEffects := func() []string {
		var out []string
		for _, l := range e.scope.Effects() {
			if strings.HasPrefix(l, "tool ") {
				out = append(out, l)
			}
		}
		return out
	}
	eventually(t, "the scope to hold the new generation only", func() bool {
		return slices.Equal(toolEffects(), []string{"tool mcp__rs__a", "tool mcp__rs__c"})
	})

	// A failed fetch keeps the previous generation.
	fail.Store(true)
	srv.addTool("d", nil)
	eventually(t, "the failed re-sync", func() bool { return e.logs.Has(slog.LevelError, "tool re-sync failed") })
	if diff := cmp.Diff([]string{"mcp__rs__a", "mcp__rs__c"}, e.names()); diff != "" {
		t.Errorf("after a failed re-sync (-want +got):\n%s", diff)
	}
	if res := e.call(tools.Caller{}, "mcp__rs__c", "{}"); res.Err != nil {
		t.Errorf("call after failed re-sync: %v", res.Err)
	}
}

func TestRegistrationConflictRollsBackTheGeneration(t *testing.T) {
	squat := func(reg *tools.Registry) func() {
		u, err := reg.Register(testScope(t, "squatter"), tools.Definition{Name: "mcp__sq__b", Execute: func(context.Context, tools.Call) (tools.Output, error) {
			return tools.Output{}, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	t.Run("lenient startup activates with zero tools", func(t *testing.T) {
		reg := tools.New(nil)
		defer squat(reg)()
		e := mustStart(t, testConfig("sq"), echoServer(t, "a", "b", "c"), withRegistry(reg))
		if got := e.names(); len(got) != 0 {
			t.Errorf("registered %v, want none from this server", got)
		}
		if !e.logs.Has(slog.LevelError, "mcp-client(sq): tool registration failed, no tools registered") {
			t.Errorf("no loud error; logs:\n%s", e.logs.Dump())
		}
	})
	t.Run("strict startup fails", func(t *testing.T) {
		reg := tools.New(nil)
		defer squat(reg)()
		cfg := testConfig("sq")
		cfg.FailOnStartupError = true
		_, err := startEnv(t, cfg, echoServer(t, "a", "b"), withRegistry(reg))
		if err == nil || !strings.Contains(err.Error(), "tool registration failed") || !errors.Is(err, tools.ErrDuplicateName) {
			t.Fatalf("start = %v", err)
		}
		if n := len(reg.List(tools.Caller{})); n != 1 {
			t.Errorf("registry has %d tools, want only the squatter", n)
		}
	})
	t.Run("on re-sync", func(t *testing.T) {
		reg := tools.New(nil)
		e := mustStart(t, testConfig("sq"), echoServer(t, "a"), withRegistry(reg))
		defer squat(reg)()
		e.srv.addTool("b", nil)
		eventually(t, "the rollback", func() bool { return e.logs.Has(slog.LevelError, "tool registration failed") })
		if got := e.names(); len(got) != 0 {
			t.Errorf("registered %v after a conflicting re-sync, want none", got)
		}
	})
}

func TestStartupFailure(t *testing.T) {
	t.Run("lenient: logs, registers nothing, keeps retrying", func(t *testing.T) {
		srv := echoServer(t, "a")
		srv.refuse.Store(true)
		cfg := testConfig("down")
		cfg.Reconnect.MaxAttempts = 2
		e := mustStart(t, cfg, srv)
		if got := e.names(); len(got) != 0 {
			t.Errorf("registered %v", got)
		}
		if !e.logs.Has(slog.LevelError, "mcp-client(down): initial connection or tool synchronization failed") {
			t.Errorf("no error log:\n%s", e.logs.Dump())
		}
		eventually(t, "give up", func() bool { return strings.HasPrefix(e.Detail(), "gave up after 2 attempts") })
		if got := srv.attempts.Load(); got != 3 {
			t.Errorf("connected %d times, want 1+maxAttempts = 3", got)
		}
		res := e.call(tools.Caller{}, "mcp__down__a", "{}")
		if !errors.Is(res.Err, tools.ErrUnknownTool) {
			t.Errorf("call = %v", res.Err)
		}
	})
	t.Run("strict: fails with the cause", func(t *testing.T) {
		srv := echoServer(t, "a")
		srv.refuse.Store(true)
		cfg := testConfig("down")
		cfg.FailOnStartupError = true
		_, err := startEnv(t, cfg, srv)
		if err == nil || !strings.Contains(err.Error(), "initial connection or tool synchronization failed") ||
			!strings.Contains(err.Error(), "connection refused by the test") {
			t.Fatalf("start = %v", err)
		}
		if got := srv.attempts.Load(); got != 1 {
			t.Errorf("connected %d times, want no retry", got)
		}
	})
	t.Run("startupTimeoutMs bounds discovery", func(t *testing.T) {
		srv := echoServer(t, "a")
		srv.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					<-ctx.Done() // never answers; cancelled by the client
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
		cfg := testConfig("slow")
		cfg.StartupTimeoutMs = 50
		cfg.FailOnStartupError = true
		_, err := startEnv(t, cfg, srv)
		if err == nil || !strings.Contains(err.Error(), "no answer within startupTimeoutMs (50ms)") {
			t.Fatalf("start = %v", err)
		}
	})
}

func TestListChangedDuringStartupStillHolds(t *testing.T) {
	srv := echoServer(t, "a")
	var once atomic.Bool
	listMiddleware(srv, func(*mcp.ListToolsResult) error {
		if once.CompareAndSwap(false, true) {
			// list_changed while the first discovery is in flight. (addTool
			// waits for the client's subscription: go-sdk sends
			// subscriptions/listen without waiting for it to be taken up,
			// and a change told before is told to nobody.)
			srv.addTool("b", nil)
		}
		return nil
	})
	cfg := testConfig("early")
	cfg.FailOnStartupError = true
	e := mustStart(t, cfg, srv)
	eventually(t, "the second tool", func() bool { return slices.Contains(e.names(), "mcp__early__b") })
}

func TestStaleNotificationIsInert(t *testing.T) {
	srv := echoServer(t, "a")
	var lists atomic.Int32
	listMiddleware(srv, func(*mcp.ListToolsResult) error { lists.Add(1); return nil })
	e := mustStart(t, testConfig("st"), srv)
	// Reach into the client to replay a notification from a connection that
	// is no longer current.
	e.client.Load().listChanged(&conn{})
	// A real notification afterwards proves the queue still runs, and that
	// the stale one caused no fetch of its own.
	srv.addTool("b", nil)
	eventually(t, "the re-sync", func() bool { return slices.Contains(e.names(), "mcp__st__b") })
	if got := lists.Load(); got != 2 {
		t.Errorf("tools/list served %d times, want 2 (startup, the real notification)", got)
	}
}

func TestDisposeUnregistersTheCurrentGeneration(t *testing.T) {
	srv := echoServer(t, "a")
	e := mustStart(t, testConfig("cur"), srv)
	srv.addTool("b", nil)
	eventually(t, "the re-sync", func() bool { return len(e.names()) == 2 })
	if err := e.scope.Dispose(waitTimeout); err != nil {
		t.Fatal(err)
	}
	if got := e.reg.List(tools.Caller{}); len(got) != 0 {
		t.Errorf("left registered: %v", got)
	}
}

func TestToolFiltersApply(t *testing.T) {
	cfg := testConfig("flt")
	cfg.Tools = ToolFilter{Include: []string{"search_*", "get"}, Exclude: []string{"*_admin"}}
	e := mustStart(t, cfg, echoServer(t, "search_code", "search_admin", "get", "delete"))
	if diff := cmp.Diff([]string{"mcp__flt__get", "mcp__flt__search_code"}, e.names()); diff != "" {
		t.Errorf("registered (-want +got):\n%s", diff)
	}
}

// TestInstructionsChangesAreAnnounced: the instructions are part of the
// assembly, so a follower of assembly changes (the gateway serves them as
// its own) sees them change on a reconnect to a server that says otherwise
// with the same tools, and go when the client gives up.
func TestInstructionsChangesAreAnnounced(t *testing.T) {
	first := newFakeServer(t, &mcp.ServerOptions{Instructions: "first"})
	first.addTool("a", nil)
	second := newFakeServer(t, &mcp.ServerOptions{Instructions: "second"})
	second.addTool("a", nil)
	var useSecond atomic.Bool
	reg := tools.New(nil)
	follower := host.NewScope(context.Background(), "follower", nil)
	t.Cleanup(func() { follower.Dispose(waitTimeout) })
	var seen atomic.Value // the section's text at the last assembly change
	reg.OnAssemblyChange(follower, func() {
		a, err := reg.Assemble(context.Background(), tools.Caller{})
		if err != nil {
			t.Error(err)
		}
		text := ""
		for _, s := range a.Sections {
			if s.Name == "mcp:ins" {
				text = strings.TrimPrefix(s.Text, "### MCP server: ins\n\n")
			}
		}
		seen.Store(text)
	})
	e := mustStart(t, testConfig("ins"), first, withRegistry(reg), func(_ *testEnv, o *options) {
		o.transport = func() mcp.Transport {
			if useSecond.Load() {
				return second.factory()()
			}
			return first.factory()()
		}
	})
	if got := seen.Load(); got != "first" {
		t.Fatalf("after start, the last assembly change showed %q", got)
	}

	useSecond.Store(true)
	first.crash()
	eventually(t, "the reconnect", func() bool { return e.logs.Has(slog.LevelInfo, "reconnected and re-synced tools") })
	if got := seen.Load(); got != "second" {
		t.Errorf("after a reconnect to new instructions, the last assembly change showed %q", got)
	}

	second.refuse.Store(true)
	second.crash()
	eventually(t, "give up", func() bool { return strings.HasPrefix(e.Detail(), "gave up") })
	if got := seen.Load(); got != "" {
		t.Errorf("after giving up, the last assembly change showed %q", got)
	}
}

func TestInstructionsReachTheAssembly(t *testing.T) {
	long := strings.Repeat("é", 20000) // 40000 bytes
	for _, tt := range []struct{ name, instructions, wantPrefix string }{
		{"short", "Use search for code.", "### MCP server: ins\n\nUse search for code."},
		{"capped", long, "### MCP server: ins\n\n" + long[:maxInstructionBytes]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, &mcp.ServerOptions{Instructions: tt.instructions})
			srv.addTool("a", nil)
			e := mustStart(t, testConfig("ins"), srv)
			a, err := e.reg.Assemble(context.Background(), tools.Caller{})
			if err != nil {
				t.Fatal(err)
			}
			var got *tools.Section
			for i := range a.Sections {
				if a.Sections[i].Name == "mcp:ins" {
					got = &a.Sections[i]
				}
			}
			if got == nil {
				t.Fatalf("no mcp:ins section in %+v", a.Sections)
			}
			if !strings.HasPrefix(got.Text, tt.wantPrefix) {
				t.Errorf("section starts %q", got.Text[:min(80, len(got.Text))])
			}
			if tt.name == "capped" && (!strings.Contains(got.Text, "[instructions truncated: 7232 more bytes dropped]") ||
				len(got.Text) > maxInstructionBytes+200) {
				t.Errorf("capped section: %d bytes, ends %q", len(got.Text), got.Text[len(got.Text)-60:])
			}
		})
	}
}
