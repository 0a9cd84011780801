package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	code := m.Run()
	removeBinaries()
	if code == 0 {
		if err := leaks.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// wait bounds every wait for something that must happen. Only a test
// that fails meets it, so it is generous: under -race on a loaded 2-core
// machine, starting dsh-host and its servers, or encoding a large answer,
// has taken past 10 s.
const wait = 30 * time.Second

// scope returns a scope for what a test registers or starts, disposed when
// the test ends.
func scope(t *testing.T) *host.Scope {
	t.Helper()
	s := host.NewScope(context.Background(), "test", slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if err := s.Dispose(wait); err != nil {
			t.Error(err)
		}
	})
	return s
}

// register adds a tool to reg for the rest of the test.
func register(t *testing.T, reg *tools.Registry, def tools.Definition) (unregister func()) {
	t.Helper()
	if def.Execute == nil {
		def.Execute = func(ctx context.Context, call tools.Call) (tools.Output, error) {
			return tools.Output{Value: "ok"}, nil
		}
	}
	un, err := reg.Register(scope(t), def)
	if err != nil {
		t.Fatalf("register %s: %v", def.Name, err)
	}
	t.Cleanup(un)
	return un
}

// echo is a tool returning its "text" argument.
func echo(name string) tools.Definition {
	return tools.Definition{
		Name:        name,
		Description: "Echo the text back.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(call.Args, &in); err != nil {
				return tools.Output{}, err
			}
			return tools.Output{Value: in.Text, Content: []tools.Content{tools.Text(in.Text)}}, nil
		},
	}
}

// harness is a gateway on reg with one go-sdk client connected in memory.
type harness struct {
	g       *Gateway
	scope   *host.Scope // the gateway's
	ss      *mcp.ServerSession
	cs      *mcp.ClientSession
	changed chan struct{} // one value per tools/list_changed the client saw
	syncs   chan syncStats
}

type syncStats struct{ added, removed int }

func newHarness(t *testing.T, reg *tools.Registry, store *attachments.Store) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{changed: make(chan struct{}, 100), syncs: make(chan syncStats, 100), scope: scope(t)}
	g, err := New(h.scope, reg, nil, &Deps{Debounce: 5 * time.Millisecond, Store: store})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	g.syncMu.Lock()
	g.afterSync = func(added, removed int, err error) {
		if err != nil {
			t.Errorf("sync: %v", err)
		}
		h.syncs <- syncStats{added, removed}
	}
	g.syncMu.Unlock()
	h.g = g

	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { h.changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	h.cs, h.ss = cs, ss
	// Before the scope's dispose, which closes the gateway.
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return h
}

// list returns the tools the client sees, by name.
func (h *harness) list(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range h.cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

func (h *harness) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// nextSync waits for the gateway's next re-assembly.
func (h *harness) nextSync(t *testing.T) syncStats {
	t.Helper()
	select {
	case s := <-h.syncs:
		return s
	case <-time.After(wait):
		t.Fatal("the gateway did not re-assemble after a registry change")
		return syncStats{}
	}
}

// waitChanged waits for a tools/list_changed notification.
func (h *harness) waitChanged(t *testing.T) {
	t.Helper()
	select {
	case <-h.changed:
	case <-time.After(wait):
		t.Fatal("the client saw no notifications/tools/list_changed")
	}
}

// asJSON decodes b, for comparing schemas whatever their formatting.
func asJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func TestListIsTheAssembly(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("echo"))
	register(t, reg, tools.Definition{Name: "no_args", Description: "Takes nothing."})
	register(t, reg, tools.Definition{
		Name:        "rich",
		Description: "A schema with nesting, enums and defaults.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"enum":["a","b"],"default":"a"},"opts":{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}},"additionalProperties":false}`),
	})
	register(t, reg, tools.Definition{Name: "folded_away", Description: "Hidden by an assemble handler."})
	// An assemble handler stands in for folding: the gateway must serve what
	// the waterfall produces, not the raw registry.
	reg.OnAssemble(scope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		a, err := next(ctx, a)
		var kept []tools.Schema
		for _, s := range a.Tools {
			if s.Name != "folded_away" {
				kept = append(kept, s)
			}
		}
		a.Tools = append(kept, tools.Schema{Name: "meta", Description: "Added by the handler.", Parameters: json.RawMessage(`{"type":"object"}`)})
		return a, err
	})

	h := newHarness(t, reg, nil)
	want, err := reg.Assemble(context.Background(), tools.Caller{Kind: "gateway", ImageInput: true})
	if err != nil {
		t.Fatal(err)
	}
	type tool struct {
		Description string
		Schema      any
	}
	wantTools := map[string]tool{}
	for _, s := range want.Tools {
		wantTools[s.Name] = tool{s.Description, asJSON(t, s.Parameters)}
	}
	gotTools := map[string]tool{}
	for name, tl := range h.list(t) {
		b, err := json.Marshal(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		gotTools[name] = tool{tl.Description, asJSON(t, b)}
	}
	if diff := cmp.Diff(wantTools, gotTools); diff != "" {
		t.Errorf("tools/list differs from the assembly (-assembly +list):\n%s", diff)
	}
	if _, ok := gotTools["folded_away"]; ok {
		t.Error("a tool the assembly dropped is listed")
	}
}

func TestInputSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "object passes through byte for byte", in: `{"type": "object",  "properties":{"z":{},"a":{}}}`, want: `{"type": "object",  "properties":{"z":{},"a":{}}}`},
		{name: "absent", in: ``, want: `{"type":"object"}`},
		{name: "null", in: `null`, want: `{"type":"object"}`},
		{name: "untyped object schema gets the type", in: `{"properties":{"a":{"type":"string"}}}`, want: `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{name: "non-object type", in: `{"type":"string"}`, wantErr: true},
		{name: "type list", in: `{"type":["object","null"]}`, wantErr: true},
		{name: "not an object", in: `[1]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := inputSchema(json.RawMessage(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("inputSchema(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && string(got) != tt.want {
				t.Errorf("inputSchema(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCallThroughThePipeline(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("echo"))
	register(t, reg, echo("guarded"))
	register(t, reg, tools.Definition{
		Name: "broken",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			return tools.Output{}, errors.New("the disk is full")
		},
	})
	register(t, reg, tools.Definition{
		Name: "value_only",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			return tools.Output{Value: map[string]int{"n": 1}}, nil
		},
	})
	reg.OnGuard(scope(t), "guarded", func(ctx context.Context, call tools.Call) error {
		return errors.New("guarded needs an approval")
	})
	var callers []tools.Caller
	var mu sync.Mutex
	reg.OnPreExecute(scope(t), "echo", func(ctx context.Context, call *tools.Call) error {
		mu.Lock()
		callers = append(callers, call.Caller)
		mu.Unlock()
		call.Args = json.RawMessage(`{"text":"rewritten by a hook"}`)
		return nil
	})
	h := newHarness(t, reg, nil)

	tests := []struct {
		tool      string
		args      any
		wantError bool
		want      []string
	}{
		{tool: "echo", args: map[string]any{"text": "hi"}, want: []string{"rewritten by a hook"}},
		{tool: "guarded", args: map[string]any{"text": "hi"}, wantError: true, want: []string{`call to "guarded" denied by a guard: guarded needs an approval`}},
		{tool: "broken", wantError: true, want: []string{"the disk is full"}},
		{tool: "value_only", want: []string{`{"n":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := h.call(t, tt.tool, tt.args)
			if res.IsError != tt.wantError {
				t.Errorf("isError = %v, want %v", res.IsError, tt.wantError)
			}
			if diff := cmp.Diff(tt.want, mcptest.Texts(res)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]tools.Caller{{Kind: "gateway", ImageInput: true, PassThrough: true}}, callers); diff != "" {
		t.Errorf("the registry saw callers (-want +got):\n%s", diff)
	}
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.NRGBA{uint8(x * 40), uint8(y * 40), 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestImageContent(t *testing.T) {
	store, err := attachments.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data := pngBytes(t, 4, 4)
	refs, err := store.SaveImages(context.Background(), []attachments.Image{{MediaType: "image/png", Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	ref := refs[0]
	missing := attachments.Ref{ID: "sha256:" + strings.Repeat("0", 64), MediaType: "image/png"}

	reg := tools.New(nil)
	register(t, reg, tools.Definition{
		Name: "snapshot",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			return tools.Output{Value: "snap", Content: []tools.Content{
				tools.Text("before"), {Type: "image", Image: &ref}, tools.Text("after"),
			}}, nil
		},
	})
	register(t, reg, tools.Definition{
		Name: "lost",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			return tools.Output{Value: "lost", Content: []tools.Content{{Type: "image", Image: &missing}, tools.Text("still here")}}, nil
		},
	})

	t.Run("stored image reaches the client", func(t *testing.T) {
		h := newHarness(t, reg, store)
		res := h.call(t, "snapshot", nil)
		if res.IsError {
			t.Fatalf("isError: %v", mcptest.Texts(res))
		}
		want := []mcp.Content{&mcp.TextContent{Text: "before"}, &mcp.ImageContent{Data: data, MIMEType: "image/png"}, &mcp.TextContent{Text: "after"}}
		if diff := cmp.Diff(want, res.Content); diff != "" {
			t.Errorf("content (-want +got):\n%s", diff)
		}
	})
	t.Run("unreadable image becomes a notice", func(t *testing.T) {
		h := newHarness(t, reg, store)
		got := mcptest.Texts(h.call(t, "lost", nil))
		if len(got) != 2 || !strings.HasPrefix(got[0], "[image unavailable: open "+missing.ID) || got[1] != "still here" {
			t.Errorf("content = %q, want an image-unavailable notice then the text", got)
		}
	})
	t.Run("no store", func(t *testing.T) {
		h := newHarness(t, reg, nil)
		got := mcptest.Texts(h.call(t, "snapshot", nil))
		want := []string{"before", "[image unavailable: no attachment store is running to read " + ref.ID + "]", "after"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("content (-want +got):\n%s", diff)
		}
	})
}

func TestCancellationReachesTheTool(t *testing.T) {
	reg := tools.New(nil)
	started := make(chan struct{})
	stopped := make(chan error, 1)
	register(t, reg, tools.Definition{
		Name: "slow",
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			close(started)
			select {
			case <-ctx.Done():
				stopped <- ctx.Err()
				return tools.Output{}, ctx.Err()
			case <-time.After(wait):
				stopped <- nil
				return tools.Output{Value: "finished"}, nil
			}
		},
	})
	h := newHarness(t, reg, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	callErr := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		callErr <- err
	}()
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("the tool never started")
	}
	cancel()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the tool's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(wait):
		t.Fatal("the client's cancellation did not reach the tool")
	}
	if err := <-callErr; err == nil {
		t.Error("the cancelled call returned no error")
	}
}

func TestListChangedOnRegistryChange(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("first"))
	h := newHarness(t, reg, nil)
	if _, ok := h.list(t)["first"]; !ok {
		t.Fatal("first is not listed")
	}

	un := register(t, reg, echo("second"))
	if s := h.nextSync(t); s != (syncStats{added: 1}) {
		t.Errorf("sync after a registration = %+v, want one tool added", s)
	}
	h.waitChanged(t)
	if got := h.list(t); got["second"] == nil || got["first"] == nil {
		t.Errorf("after the notification the list is %v, want first and second", keys(got))
	}

	un()
	if s := h.nextSync(t); s != (syncStats{removed: 1}) {
		t.Errorf("sync after an unregistration = %+v, want one tool removed", s)
	}
	h.waitChanged(t)
	if got := h.list(t); got["second"] != nil {
		t.Errorf("after the notification the list is %v, want second gone", keys(got))
	}

	// A changed description is a change; the tool is replaced, not duplicated.
	unThird := register(t, reg, tools.Definition{Name: "third"})
	h.nextSync(t)
	h.waitChanged(t)
	unThird()
	h.nextSync(t)
	h.waitChanged(t)
	// An assemble handler coming changes the assembly without any tool
	// changing: the registry announces it all the same.
	reg.OnAssemble(scope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		a, err := next(ctx, a)
		for i := range a.Tools {
			a.Tools[i].Description += " (annotated)"
		}
		return a, err
	})
	if s := h.nextSync(t); s != (syncStats{added: 1}) {
		t.Errorf("sync after a description change = %+v, want one tool replaced", s)
	}
	h.waitChanged(t)
	if got := h.list(t); len(got) != 1 || got["first"].Description != "Echo the text back. (annotated)" {
		t.Errorf("after a description change the list is %v", got)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestNoNotificationWhenTheAssemblyIsUnchanged(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("visible"))
	// Hides every tool named hidden_*, as folding hides mcp__* tools.
	reg.OnAssemble(scope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		a, err := next(ctx, a)
		var kept []tools.Schema
		for _, s := range a.Tools {
			if !strings.HasPrefix(s.Name, "hidden_") {
				kept = append(kept, s)
			}
		}
		a.Tools = kept
		return a, err
	})
	h := newHarness(t, reg, nil)

	// A registration the assembly hides, and a refresh with nothing new.
	register(t, reg, tools.Definition{Name: "hidden_one"})
	if s := h.nextSync(t); s != (syncStats{}) {
		t.Errorf("sync after a hidden registration = %+v, want no change", s)
	}
	h.g.refreshSoon()
	if s := h.nextSync(t); s != (syncStats{}) {
		t.Errorf("sync after a refresh = %+v, want no change", s)
	}
	// Re-registering an identical tool (an MCP server re-syncing) changes
	// nothing either. Holding the sync lock makes both changes land before
	// the gateway assembles, whatever the scheduler does.
	un := register(t, reg, echo("resynced"))
	h.nextSync(t)
	h.waitChanged(t)
	h.g.syncMu.Lock()
	un()
	register(t, reg, echo("resynced"))
	h.g.syncMu.Unlock()
	if s := h.nextSync(t); s != (syncStats{}) {
		t.Errorf("sync after a re-registration = %+v, want no change", s)
	}

	// The first notification the client sees is the one for the next real
	// change: none was sent for the no-ops above.
	select {
	case <-h.changed:
		t.Fatal("a notification was sent for an unchanged assembly")
	default:
	}
	register(t, reg, echo("real"))
	// Skip a second no-op sync the re-registration may have scheduled.
	for s := h.nextSync(t); s == (syncStats{}); s = h.nextSync(t) {
	}
	h.waitChanged(t)
}

// TestDisposeClosesTheGateway: the gateway lives as long as its scope; the
// dispose ends its sessions, closes Done and stops following the registry.
func TestDisposeClosesTheGateway(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("first"))
	h := newHarness(t, reg, nil)
	select {
	case <-h.g.Done():
		t.Fatal("Done is closed before the dispose")
	default:
	}
	if err := h.scope.Dispose(wait); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.g.Done():
	default:
		t.Fatal("Done is still open after the dispose")
	}
	ended := make(chan error, 1)
	go func() { ended <- h.ss.Wait() }()
	select {
	case <-ended:
	case <-time.After(wait):
		t.Fatal("the session connected to the gateway outlived its dispose")
	}
	if _, err := h.cs.ListTools(context.Background(), nil); err == nil {
		t.Error("tools/list succeeded on a disposed gateway")
	}
	if err := h.g.syncNow(context.Background()); err == nil {
		t.Error("syncNow on a closed gateway succeeded")
	}
}

// TestNewFailsCleanly: an assembly error fails New and leaves nothing on
// the scope.
func TestNewFailsCleanly(t *testing.T) {
	reg := tools.New(nil)
	reg.OnAssemble(scope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		return a, errors.New("folding is broken")
	})
	s := scope(t)
	if _, err := New(s, reg, nil, nil); err == nil || !strings.Contains(err.Error(), "folding is broken") {
		t.Fatalf("New = %v, want the assembly's error", err)
	}
	if got := s.Effects(); len(got) != 0 {
		t.Errorf("New failed but left %q on the scope", got)
	}
}

func TestInstructionsAreTheSections(t *testing.T) {
	reg := tools.New(nil)
	reg.OnAssemble(scope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		a.Sections = append(a.Sections,
			tools.Section{Name: "mcp:github", Text: "### MCP server: github\n\nSearch before you create."},
			tools.Section{Name: "empty", Text: "  "},
			tools.Section{Name: "mcp:fs", Text: "### MCP server: fs\n\nPaths are absolute.\n"},
		)
		return next(ctx, a)
	})
	h := newHarness(t, reg, nil)
	want := "### MCP server: github\n\nSearch before you create.\n\n### MCP server: fs\n\nPaths are absolute."
	if got := h.cs.InitializeResult().Instructions; got != want {
		t.Errorf("instructions = %q, want %q", got, want)
	}
}

// connectClient connects a go-sdk client to g in memory, for the rest of
// the test.
func connectClient(t *testing.T, g *Gateway) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// TestAnswersAreCurrent: a client asking right after a change, well within
// the debounce, gets the changed surface, and a client connecting gets the
// instructions as they are then.
func TestAnswersAreCurrent(t *testing.T) {
	reg := tools.New(nil)
	g, err := New(scope(t), reg, nil, &Deps{Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	first := connectClient(t, g)
	if got := first.InitializeResult().Instructions; got != "" {
		t.Errorf("instructions %q before any section, want none", got)
	}

	register(t, reg, echo("late"))
	reg.OnAssemble(scope(t), func(ctx context.Context, a tools.Assembly, next host.Next[tools.Assembly]) (tools.Assembly, error) {
		a.Sections = append(a.Sections, tools.Section{Name: "late", Text: "Call late last."})
		return next(ctx, a)
	})
	res, err := first.CallTool(context.Background(), &mcp.CallToolParams{Name: "late", Arguments: map[string]any{"text": "now"}})
	if err != nil || res.IsError {
		t.Fatalf("call of a tool registered within the debounce: %v %v", err, mcptest.Texts(res))
	}
	second := connectClient(t, g)
	if got := second.InitializeResult().Instructions; got != "Call late last." {
		t.Errorf("instructions %q, want the section added since the gateway started", got)
	}
	var names []string
	for tool, err := range second.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !cmp.Equal(names, []string{"late"}) {
		t.Errorf("tools/list = %v, want [late]", names)
	}
}

func TestFlappingChangesStillReachClients(t *testing.T) {
	reg := tools.New(nil)
	// The debounce is long next to the changes' period, so that a stalled
	// test goroutine does not let the timer fire on its own.
	g, err := New(scope(t), reg, nil, &Deps{Debounce: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan struct{}, 1)
	g.syncMu.Lock()
	g.afterSync = func(int, int, error) {
		select {
		case synced <- struct{}{}:
		default:
		}
	}
	g.syncMu.Unlock()

	// Changes every 5ms would postpone a plain debounce forever; the
	// gateway must re-assemble within maxDebounceFactor delays anyway.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(wait)
	for {
		select {
		case <-synced:
			return
		case <-tick.C:
			g.refreshSoon()
		case <-deadline:
			t.Fatal("a steady stream of changes postponed the re-assembly indefinitely")
		}
	}
}

// relayed is a tools.MCPResult from no particular plugin: the gateway
// relays what the contract gives, whoever made the value.
type relayed struct {
	decoded    *mcp.CallToolResult // nil: the value has JSON only
	content    []json.RawMessage
	structured json.RawMessage
}

func (r relayed) MCPCallToolResult() *mcp.CallToolResult {
	if r.decoded == nil {
		return nil
	}
	out := *r.decoded
	return &out
}
func (r relayed) MCPContent() []json.RawMessage         { return r.content }
func (r relayed) MCPStructuredContent() json.RawMessage { return r.structured }

func TestRelaysMCPResults(t *testing.T) {
	reg := tools.New(nil)
	tool := func(name string, v relayed, failed bool) {
		register(t, reg, tools.Definition{Name: name, Execute: func(context.Context, tools.Call) (tools.Output, error) {
			return tools.Output{Value: v, Content: []tools.Content{tools.Text("the model's projection")}, Failed: failed}, nil
		}})
	}
	tool("decoded", relayed{decoded: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "as decoded"}}, StructuredContent: map[string]any{"n": 1.0}}}, false)
	tool("json", relayed{content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"as JSON"}`)}, structured: json.RawMessage(`{"n":2}`)}, false)
	tool("failed", relayed{content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"refused"}`)}}, true)
	tool("garbled", relayed{content: []json.RawMessage{json.RawMessage(`{"type":"nonsense"}`)}}, false)
	h := newHarness(t, reg, nil)

	tests := []struct {
		tool       string
		wantError  bool
		want       string // the text's beginning
		structured any
	}{
		{"decoded", false, "as decoded", map[string]any{"n": 1.0}},
		{"json", false, "as JSON", map[string]any{"n": 2.0}},
		{"failed", true, "refused", nil},
		{"garbled", true, `the result of "garbled" could not be relayed: `, nil},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := h.call(t, tt.tool, nil)
			text := strings.Join(mcptest.Texts(res), "\n")
			if res.IsError != tt.wantError || !strings.HasPrefix(text, tt.want) {
				t.Errorf("isError %v, text %q; want isError %v and a text beginning %q", res.IsError, text, tt.wantError, tt.want)
			}
			if diff := cmp.Diff(tt.structured, res.StructuredContent); diff != "" {
				t.Errorf("structuredContent (-want +got):\n%s", diff)
			}
		})
	}
}
