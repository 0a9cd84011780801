package mcpfold

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	goleak.VerifyTestMain(m)
}

// memGate is an in-memory gateStore that counts writes and can fail them.
type memGate struct {
	mu        sync.Mutex
	raw       any
	writes    int
	loadErr   error
	writeErr  error
	watchFn   func(gateState, []string, error)
	updateHit func() // runs inside update, before fn
}

func (m *memGate) load() (gateState, []string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loadErr != nil {
		return gateState{}, nil, m.loadErr
	}
	g, p := normalize(m.raw, nil)
	return g, p, nil
}

func (m *memGate) update(fn func(*gateState) (bool, error)) (gateState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.updateHit != nil {
		m.updateHit()
	}
	g, _ := normalize(m.raw, nil)
	changed, err := fn(&g)
	if err != nil {
		return g, err
	}
	if !changed {
		return g, nil
	}
	if m.writeErr != nil {
		return g, m.writeErr
	}
	m.raw = roundTrip(g.section())
	m.writes++
	return g, nil
}

func (m *memGate) watch(s *host.Scope, fn func(gateState, []string, error)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.watchFn = fn
}

// edit replaces the stored section as an outside editor would and tells the
// watcher.
func (m *memGate) edit(raw any) {
	m.mu.Lock()
	m.raw = raw
	fn := m.watchFn
	m.mu.Unlock()
	g, p := normalize(raw, nil)
	fn(g, p, nil)
}

func (m *memGate) stored() any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.raw
}

func (m *memGate) writeCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// roundTrip gives a value the shape a decoder produces (float64 numbers,
// []any, map[string]any), as the settings file would.
func roundTrip(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// fakeTool is an MCP-shaped tool registered straight into a registry.
type fakeTool struct {
	name, desc, schema string
}

// fixtureServer is the Origin.Server a fixture tool registers with: the
// fixtures are named as mcp-client names the tools of a server whose name
// has no "__" (mcp__<server>__<tool>); a name without the prefix has no
// server. Tests of servers named with "__" declare the server themselves.
func fixtureServer(name string) string {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return ""
	}
	server, _, _ := strings.Cut(rest, "__")
	return server
}

const issueSchema = `{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title"]}`

var fleet = []fakeTool{
	{"mcp__github__create_issue", "Create a new issue in a GitHub repository.", issueSchema},
	{"mcp__github__search_issues", "Search issues and pull requests across GitHub repositories.", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`},
	{"mcp__github__get_file_contents", "Get the contents of a file or directory from a GitHub repository.", `{"type":"object","properties":{"path":{"type":"string"}}}`},
	{"mcp__fs__read_file", "Read the complete contents of a file from the file system.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`},
	{"mcp__fs__write_file", "Create a new file or completely overwrite an existing file.", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`},
	{"mcp__fs__list_directory", "Get a detailed listing of all files and directories in a specified path.", `{"type":"object","properties":{"path":{"type":"string"}}}`},
	{"bash", "Run a shell command.", `{"type":"object","properties":{"command":{"type":"string"}}}`},
}

// seen records what a fake tool was called with.
type seen struct {
	mu    sync.Mutex
	calls []tools.Call
	ctxs  []context.Context
}

func (s *seen) add(ctx context.Context, c tools.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	s.ctxs = append(s.ctxs, ctx)
}

func (s *seen) last(t *testing.T) (context.Context, tools.Call) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		t.Fatal("the tool was never called")
	}
	return s.ctxs[len(s.ctxs)-1], s.calls[len(s.calls)-1]
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// testScope returns a scope called id, disposed when the test ends: the
// owner of what a test registers beside the adapter.
func testScope(t testing.TB, id string) *host.Scope {
	s := host.NewScope(context.Background(), id, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if err := s.Dispose(time.Second); err != nil {
			t.Error(err)
		}
	})
	return s
}

// register adds fake tools whose Execute echoes the call, each on its
// fixtureServer.
func register(t testing.TB, reg *tools.Registry, rec *seen, list ...fakeTool) {
	t.Helper()
	for _, f := range list {
		registerOn(t, reg, rec, fixtureServer(f.name), f)
	}
}

// registerOn adds fake tools of server whose Execute echoes the call.
func registerOn(t testing.TB, reg *tools.Registry, rec *seen, server string, list ...fakeTool) {
	t.Helper()
	for _, f := range list {
		name := f.name
		_, err := reg.Register(testScope(t, "client"), tools.Definition{
			Name: f.name, Description: f.desc, InputSchema: json.RawMessage(f.schema),
			Execute: func(ctx context.Context, c tools.Call) (tools.Output, error) {
				if rec != nil {
					rec.add(ctx, c)
				}
				return tools.Output{Value: map[string]any{"tool": name, "args": json.RawMessage(c.Args)}}, nil
			},
			Origin: tools.Origin{Server: server, RawName: name},
		})
		if err != nil {
			t.Fatalf("register %s: %v", f.name, err)
		}
	}
}

// rig is an adapter started on its own scope over a fresh registry.
type rig struct {
	t     *testing.T
	reg   *tools.Registry
	cmds  *commands.Registry
	store *memGate
	a     *adapter
	scope *host.Scope
	logs  *mcptest.SyncBuffer
	rec   *seen
}

type rigOpt func(*rigConfig)

type rigConfig struct {
	cfg      Config
	noStore  bool
	store    *memGate
	noCmds   bool
	tools    []fakeTool
	before   func(reg *tools.Registry, cmds *commands.Registry)
	instance string
}

func withConfig(f func(*Config)) rigOpt { return func(c *rigConfig) { f(&c.cfg) } }
func withoutSettings() rigOpt           { return func(c *rigConfig) { c.noStore = true } }
func withStore(m *memGate) rigOpt       { return func(c *rigConfig) { c.store = m } }
func withoutCommands() rigOpt           { return func(c *rigConfig) { c.noCmds = true } }
func withTools(list ...fakeTool) rigOpt { return func(c *rigConfig) { c.tools = list } }
func before(f func(*tools.Registry, *commands.Registry)) rigOpt {
	return func(c *rigConfig) { c.before = f }
}

func newRig(t *testing.T, opts ...rigOpt) *rig {
	t.Helper()
	rc := rigConfig{cfg: Defaults(), tools: fleet, instance: "fold"}
	for _, o := range opts {
		o(&rc)
	}
	r := &rig{t: t, reg: tools.New(nil), logs: &mcptest.SyncBuffer{}, rec: &seen{}}
	if !rc.noCmds {
		r.cmds = commands.New()
	}
	register(t, r.reg, r.rec, rc.tools...)
	if rc.before != nil {
		rc.before(r.reg, r.cmds)
	}
	var store gateStore
	if !rc.noStore {
		r.store = rc.store
		if r.store == nil {
			r.store = &memGate{}
		}
		store = r.store
	}
	logger := slog.New(slog.NewTextHandler(r.logs, nil))
	a, err := newAdapter(r.reg, rc.cfg, store, rc.instance, logger)
	if err != nil {
		t.Fatalf("newAdapter: %v", err)
	}
	r.a = a
	r.scope = host.NewScope(context.Background(), rc.instance, logger)
	t.Cleanup(func() { _ = r.scope.Dispose(0) })
	if err := a.start(r.scope, r.cmds); err != nil {
		t.Fatalf("start: %v", err)
	}
	return r
}

var testCaller = tools.Caller{Kind: "test"}

// names returns the assembled tool names for caller.
func (r *rig) names(caller tools.Caller) []string {
	r.t.Helper()
	asm, err := r.reg.Assemble(context.Background(), caller)
	if err != nil {
		r.t.Fatalf("Assemble: %v", err)
	}
	var out []string
	for _, s := range asm.Tools {
		out = append(out, s.Name)
	}
	return out
}

// exec runs a tool through the registry as testCaller.
func (r *rig) exec(name string, args string) tools.Result {
	r.t.Helper()
	return r.reg.Execute(context.Background(), testCaller, name, json.RawMessage(args))
}

// text returns a result's model-facing text.
func text(res tools.Result) string {
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// errText returns the error text of a meta-tool's error value, or fails;
// the result must be marked failed, so a gateway's client sees isError.
func errText(t *testing.T, res tools.Result) string {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("the meta-tool failed with a Go error: %v", res.Err)
	}
	e, ok := res.Value.(errorValue)
	if !ok {
		t.Fatalf("value is %T (%v), want an errorValue", res.Value, res.Value)
	}
	if !res.Failed {
		t.Fatalf("the error value %q is not marked Failed", e.Error)
	}
	return e.Error
}

// run runs a /mcp command.
func (r *rig) run(input string) commands.Reply {
	r.t.Helper()
	return r.cmds.Run(context.Background(), testCaller, "/mcp "+input)
}

// errBoom is a failure tests inject.
var errBoom = errors.New("disk full")

// contextCanceled returns a context that is already canceled.
func contextCanceled() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}
