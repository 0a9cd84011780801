package mcpclient_test

// End-to-end tests: a real host.Host runs mcp-client instances against real
// MCP server processes (the in-repo fixture over stdio and Streamable HTTP,
// and the pinned npm servers), and the tests act only through the host and
// its services, as the binary and the model do.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpoutput"
	"github.com/dsh-host/dsh-host/services/attachments"
	_ "github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// e2eWait bounds every wait for a server or the host; generous because the
// machine running the tests may be slow and busy.
const e2eWait = 30 * time.Second

// callWait bounds a call (harness.call): the projection of a large result
// for a model is CPU work, and a 2560×1440 image's downscale took 18 s of
// e2eWait's 30 under -race at load 23 (TestE2EResultContent).
const callWait = 2 * time.Minute

// fixtureRawTools are the tools the fixture lists.
var fixtureRawTools = mcptest.FixtureTools()

var (
	modelCaller = tools.Caller{Kind: "test", ID: "e2e"}
	imageCaller = tools.Caller{Kind: "test", ID: "e2e-images", ImageInput: true}
)

// harness is one host with the built-in services and the instances a test
// applies.
type harness struct {
	t      testing.TB
	h      *host.Host
	logs   *mcptest.SyncBuffer
	attDir string
	// exes are the server executables that must have no process left when
	// the host has shut down.
	exes []string
}

// newHarness starts a host whose data lives in temporary directories. At the
// end of the test it shuts the host down and checks that no fixture process
// and no goroutine started by the test is left.
func newHarness(t testing.TB) *harness {
	t.Helper()
	return newHarnessLogging(t, slog.LevelDebug)
}

// newHarnessLogging is newHarness with the host logging at level.
func newHarnessLogging(t testing.TB, level slog.Level) *harness {
	t.Helper()
	// Registered first, so it runs last: after the host's shutdown.
	existing := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, existing) })
	t.Setenv("DSH_HOME", t.TempDir())

	logs := &mcptest.SyncBuffer{}
	hs := &harness{
		t:      t,
		logs:   logs,
		attDir: filepath.Join(t.TempDir(), "attachments"),
		h: host.New(&host.Options{
			Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})),
			DisposeTimeout: 15 * time.Second,
		}),
	}
	hs.exes = []string{mcptest.FixtureBinary(t)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
		defer cancel()
		if err := hs.h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		for _, exe := range hs.exes {
			if pids := mcptest.ChildProcesses(t, exe); len(pids) > 0 {
				t.Errorf("%s processes left after shutdown: %v", filepath.Base(exe), pids)
			}
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return hs
}

// apply runs the host on the built-in services (attachments in a temporary
// directory) plus entries, and returns once every instance has settled.
func (hs *harness) apply(entries ...host.Entry) {
	hs.t.Helper()
	c := &host.Composition{File: "e2e.yml", Entries: append([]host.Entry{{
		ID: "attachments", Name: "attachments", Config: map[string]any{"dir": hs.attDir},
	}}, entries...)}
	ctx, cancel := context.WithTimeout(hs.t.Context(), e2eWait)
	defer cancel()
	if err := hs.h.Update(ctx, c); err != nil {
		hs.t.Fatalf("apply: %v", err)
	}
}

func (hs *harness) registry() *tools.Registry { hs.t.Helper(); return service(hs, tools.Key) }

func (hs *harness) store() *attachments.Store { hs.t.Helper(); return service(hs, attachments.Key) }

// service returns the host's service key, failing the test when there is
// no active provider.
func service[T any](hs *harness, key host.Key[T]) T {
	hs.t.Helper()
	v, ok := host.Lookup(hs.h, key)
	if !ok {
		hs.t.Fatalf("no %s service; status: %+v", key.ServiceName(), hs.h.Status())
	}
	return v
}

func (hs *harness) status(id string) host.InstanceStatus {
	for _, st := range hs.h.Status() {
		if st.ID == id {
			return st
		}
	}
	return host.InstanceStatus{}
}

func (hs *harness) requireActive(id string) {
	hs.t.Helper()
	if st := hs.status(id); st.State != host.StateActive {
		hs.t.Fatalf("instance %s is %q (%s), want active", id, st.State, st.Err)
	}
}

// call executes a tool through the registry's whole pipeline.
func (hs *harness) call(caller tools.Caller, name string, args any) tools.Result {
	hs.t.Helper()
	ctx, cancel := context.WithTimeout(hs.t.Context(), callWait)
	defer cancel()
	return hs.callCtx(ctx, caller, name, args)
}

func (hs *harness) callCtx(ctx context.Context, caller tools.Caller, name string, args any) tools.Result {
	hs.t.Helper()
	return hs.callWith(ctx, caller, name, args, nil)
}

// callWith is callCtx with the caller's back-channels ch.
func (hs *harness) callWith(ctx context.Context, caller tools.Caller, name string, args any, ch *tools.Channels) tools.Result {
	hs.t.Helper()
	raw := json.RawMessage("{}")
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			hs.t.Fatal(err)
		}
		raw = b
	}
	return hs.registry().Run(ctx, tools.Call{Caller: caller, Name: name, Args: raw, Channels: ch})
}

// serverTools returns the registered public names of one server's tools.
func (hs *harness) serverTools(server string) []string {
	var names []string
	for _, d := range hs.registry().List(tools.Caller{Kind: "test"}) {
		if d.Origin.Server == server {
			names = append(names, d.Name)
		}
	}
	slices.Sort(names)
	return names
}

// eventually waits until cond holds, re-checking it until e2eWait passes:
// the state lives in another process.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	mcptest.WaitFor(t, e2eWait, what, cond)
}

// applyNode runs the npm server pkg (with args) over stdio as the instance
// and serverName server, waits for it to be active, and returns the
// command (node), whose processes must be gone at the end.
func (hs *harness) applyNode(server, pkg string, args ...string) (command string) {
	hs.t.Helper()
	command, argv := mcptest.NodeServer(hs.t, pkg, args...)
	hs.exes = append(hs.exes, command)
	cfg := map[string]any{"transport": "stdio", "serverName": server, "command": command, "args": toAny(argv)}
	if pkg == mcptest.ServerFilesystem {
		// The directories it serves, granted as import grants them.
		cfg["sandbox"] = map[string]any{"write": toAny(args)}
	}
	hs.apply(host.Entry{ID: server, Name: "mcp-client", Config: cfg})
	hs.requireActive(server)
	return command
}

// publicNames maps raw names to the names server registers them under.
func publicNames(server string, raw ...string) []string {
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = mcpclient.PublicToolName(server, r)
	}
	slices.Sort(out)
	return out
}

// stdioFixture is an mcp-client entry for the fixture over stdio, with a
// quick reconnect policy; extra is merged over its config.
func stdioFixture(t testing.TB, id, server string, extra map[string]any, args ...string) host.Entry {
	t.Helper()
	cfg := map[string]any{
		"transport":  "stdio",
		"serverName": server,
		"command":    mcptest.FixtureBinary(t),
		"args":       toAny(append([]string{"-name", server}, args...)),
		"reconnect":  map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": 5},
	}
	// The sandbox is on by default: grant the files the flags name, and
	// the one FIXTURE_CANCEL_FILE names.
	writes := mcptest.FixtureWrites(args...)
	if env, ok := extra["env"].(map[string]any); ok {
		if f, ok := env["FIXTURE_CANCEL_FILE"].(string); ok {
			writes = append(writes, mcptest.FixtureWrites("-cancel-file", f)...)
		}
	}
	if len(writes) > 0 {
		cfg["sandbox"] = map[string]any{"write": toAny(writes)}
	}
	maps.Copy(cfg, extra)
	return host.Entry{ID: id, Name: "mcp-client", Config: cfg}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// text joins the text blocks of a result's model-facing content.
func text(res tools.Result) string {
	var parts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func images(res tools.Result) []*attachments.Ref {
	var refs []*attachments.Ref
	for _, c := range res.Content {
		if c.Image != nil {
			refs = append(refs, c.Image)
		}
	}
	return refs
}

// canonical returns a result's canonical value as generic JSON.
func canonical(t testing.TB, res tools.Result) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.Value)
	if err != nil {
		t.Fatalf("canonical value does not marshal: %v", err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("canonical value %s is not a JSON object: %v", b, err)
	}
	return v
}

// imageData returns the base64 data of the image blocks in a canonical value.
func imageData(t *testing.T, value map[string]any) []string {
	t.Helper()
	blocks, _ := value["content"].([]any)
	var out []string
	for _, b := range blocks {
		if m, ok := b.(map[string]any); ok && m["type"] == "image" {
			s, _ := m["data"].(string)
			out = append(out, s)
		}
	}
	return out
}

func TestE2EDiscoveryAndRoundTrips(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", nil))
	hs.requireActive("fx")

	if diff := cmp.Diff(publicNames("fx", fixtureRawTools...), hs.serverTools("fx")); diff != "" {
		t.Errorf("registered tools (-want +got):\n%s", diff)
	}
	// The sandbox, on by default, says what it enforces (or why not).
	want := fmt.Sprintf("connected, %d tools, sandboxed (landlock v", len(fixtureRawTools))
	if abi, _ := sandbox.Support(); abi == 0 {
		want = fmt.Sprintf("connected, %d tools, not sandboxed: ", len(fixtureRawTools))
	}
	if got := hs.status("fx").Detail; !strings.HasPrefix(got, want) || !strings.Contains(got, "connect none") {
		t.Errorf("status detail = %q, want %q... with connect none", got, want)
	}
	if st := hs.status("fx"); st.Sandbox == "" || !strings.HasSuffix(st.Detail, ", "+st.Sandbox) {
		t.Errorf("status Sandbox = %q, want the end of the detail %q", st.Sandbox, st.Detail)
	}

	// The dotted name is normalized with a hash, and only the raw name goes
	// on the wire.
	dotted := mcpclient.PublicToolName("fx", "admin.reset")
	if !strings.HasPrefix(dotted, "mcp__fx__admin_reset_") || len(dotted) != len("mcp__fx__admin_reset_")+12 {
		t.Errorf("PublicToolName(fx, admin.reset) = %q, want mcp__fx__admin_reset_<12 hex>", dotted)
	}
	if def, ok := hs.registry().Get(dotted); !ok {
		t.Errorf("%s not registered", dotted)
	} else if want := (tools.Origin{Instance: "fx", Server: "fx", RawName: "admin.reset", Listing: def.Origin.Listing}); def.Origin != want || def.Origin.Listing == 0 {
		t.Errorf("origin of %s = %+v, want %+v", dotted, def.Origin, want)
	}

	tests := []struct {
		raw     string
		args    any
		want    string
		wantErr bool
	}{
		{raw: "add", args: map[string]any{"a": 2, "b": 3}, want: "5"},
		{raw: "greet", want: "Hello, World!"},
		{raw: "greet", args: map[string]any{"name": "Ada"}, want: "Hello, Ada!"},
		{raw: "shout", args: map[string]any{"text": "hi"}, want: "HI"},
		// Non-object arguments are refused by the registry, before any
		// guard: the server would read something other than the policy.
		{raw: "ping", args: []int{1, 2}, want: `Error: arguments of "mcp__fx__ping" cannot be read: arguments must be a JSON object`, wantErr: true},
		{raw: "admin.reset", want: "reset done"},
		{raw: "fail", want: "Error: the fixture failed on purpose", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			res := hs.call(modelCaller, mcpclient.PublicToolName("fx", tc.raw), tc.args)
			if got := text(res); got != tc.want {
				t.Errorf("content = %q, want %q", got, tc.want)
			}
			if len(res.Content) != 1 {
				t.Errorf("content has %d blocks, want one text block: %+v", len(res.Content), res.Content)
			}
			switch {
			case tc.wantErr && res.Err == nil:
				t.Error("no error for an isError result")
			case tc.wantErr && errors.Is(res.Err, tools.ErrRefused):
				t.Errorf("isError reported as a refusal: %v", res.Err)
			case !tc.wantErr && res.Err != nil:
				t.Errorf("error: %v", res.Err)
			}
		})
	}

	// add advertises an outputSchema: the canonical value keeps
	// structuredContent next to the content blocks.
	v := canonical(t, hs.call(modelCaller, mcpclient.PublicToolName("fx", "add"), map[string]any{"a": 2, "b": 3}))
	if diff := cmp.Diff(map[string]any{"sum": 5.0}, v["structuredContent"]); diff != "" {
		t.Errorf("structuredContent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{map[string]any{"type": "text", "text": "5"}}, v["content"]); diff != "" {
		t.Errorf("canonical content (-want +got):\n%s", diff)
	}
}

func TestE2EImages(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", nil))
	imageTool := mcpclient.PublicToolName("fx", "image")

	t.Run("admitted as a durable reference", func(t *testing.T) {
		res := hs.call(imageCaller, imageTool, nil)
		if res.Err != nil {
			t.Fatalf("error: %v", res.Err)
		}
		var kinds []string
		for _, c := range res.Content {
			kinds = append(kinds, c.Type)
		}
		if diff := cmp.Diff([]string{"text", "image", "text"}, kinds); diff != "" {
			t.Fatalf("content blocks in order (-want +got):\n%s\n%+v", diff, res.Content)
		}
		if !strings.Contains(res.Content[0].Text, "before the image") || !strings.Contains(res.Content[2].Text, "after the image") {
			t.Errorf("text around the image = %q, %q", res.Content[0].Text, res.Content[2].Text)
		}
		data := imageData(t, canonical(t, res))
		if len(data) != 1 {
			t.Fatalf("canonical value has %d image blocks, want 1", len(data))
		}
		want, err := base64.StdEncoding.DecodeString(data[0])
		if err != nil {
			t.Fatalf("canonical image data is not base64: %v", err)
		}
		ref := res.Content[1].Image
		if ref.MediaType != "image/png" || ref.Width != 4 || ref.Height != 4 || ref.Bytes != int64(len(want)) {
			t.Errorf("ref = %+v, want a 4x4 image/png of %d bytes", *ref, len(want))
		}
		rc, _, err := hs.store().Open(ref.ID)
		if err != nil {
			t.Fatalf("open %s: %v", ref.ID, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Error("stored image differs from the server's bytes")
		}
		if _, err := png.Decode(bytes.NewReader(got)); err != nil {
			t.Errorf("stored image is not a PNG: %v", err)
		}
		assertNoBase64(t, res, data[0])
	})

	t.Run("refused without image input", func(t *testing.T) {
		res := hs.call(modelCaller, imageTool, nil)
		if res.Err != nil {
			t.Fatalf("error: %v", res.Err)
		}
		if refs := images(res); len(refs) != 0 {
			t.Errorf("image blocks for a caller without image input: %+v", refs)
		}
		got := text(res)
		for _, want := range []string{"before the image", "[image unavailable: image/png", "after the image"} {
			if !strings.Contains(got, want) {
				t.Errorf("content %q lacks %q", got, want)
			}
		}
		data := imageData(t, canonical(t, res))
		if len(data) != 1 {
			t.Fatalf("canonical value has %d image blocks, want the raw image kept", len(data))
		}
		assertNoBase64(t, res, data[0])
	})

	t.Run("bytes that do not match the declared type", func(t *testing.T) {
		res := hs.call(imageCaller, mcpclient.PublicToolName("fx", "bad-image"), nil)
		if refs := images(res); len(refs) != 0 {
			t.Errorf("a PNG-declared image that is not a PNG was admitted: %+v", refs)
		}
		if got := text(res); !strings.Contains(got, "image unavailable") && res.Err == nil {
			t.Errorf("content %q neither explains the refused image nor reports an error", got)
		}
		// The connection survives it.
		if got := text(hs.call(modelCaller, mcpclient.PublicToolName("fx", "ping"), nil)); got != "pong" {
			t.Errorf("ping after bad-image = %q", got)
		}
	})
}

func assertNoBase64(t *testing.T, res tools.Result, data string) {
	t.Helper()
	b, err := json.Marshal(res.Content)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), data) || strings.Contains(string(b), data[:16]) {
		t.Errorf("model-facing content carries the image's base64: %s", b)
	}
}

func TestE2ECrashReconnects(t *testing.T) {
	hs := newHarness(t)
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	hs.apply(stdioFixture(t, "fx", "fx", nil, "-starts-file", starts))
	want := publicNames("fx", fixtureRawTools...)
	fixture := mcptest.FixtureBinary(t)
	before := mcptest.ChildProcesses(t, fixture)
	if len(before) != 1 {
		t.Fatalf("fixture processes = %v, want one", before)
	}

	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("fx", "crash"), nil)); got != "crashing in 25ms" {
		t.Fatalf("crash = %q", got)
	}
	// The supervisor starts a new process once the old one is gone, and
	// never runs two.
	eventually(t, "a second server start", func() bool {
		if pids := mcptest.ChildProcesses(t, fixture); len(pids) > 1 {
			t.Fatalf("two fixture processes at once: %v", pids)
		}
		return countLines(t, starts) >= 2
	})
	eventually(t, "calls to succeed again", func() bool {
		return hs.call(modelCaller, mcpclient.PublicToolName("fx", "ping"), nil).Err == nil
	})
	after := mcptest.ChildProcesses(t, fixture)
	if len(after) != 1 || after[0] == before[0] {
		t.Errorf("fixture processes after reconnect = %v (before %v), want one new process", after, before)
	}
	if diff := cmp.Diff(want, hs.serverTools("fx")); diff != "" {
		t.Errorf("tools after reconnect (-want +got):\n%s", diff)
	}
	if got := len(hs.serverToolDefs()); got != len(want) {
		t.Errorf("registry holds %d tools, want %d (no duplicates)", got, len(want))
	}
	hs.requireActive("fx")
}

func TestE2ECrashLoopGivesUp(t *testing.T) {
	hs := newHarness(t)
	dir := t.TempDir()
	starts, trigger := filepath.Join(dir, "starts"), filepath.Join(dir, "crash-now")
	const maxAttempts = 3
	hs.apply(stdioFixture(t, "fx", "fx", map[string]any{
		"reconnect": map[string]any{"initialDelayMs": 10, "maxDelayMs": 40, "maxAttempts": maxAttempts},
	}, "-starts-file", starts, "-crash-if-exists", trigger))
	if got := len(hs.serverTools("fx")); got != len(fixtureRawTools) {
		t.Fatalf("%d tools registered before the crash loop, want %d", got, len(fixtureRawTools))
	}

	// From now on every start crashes.
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hs.call(modelCaller, mcpclient.PublicToolName("fx", "crash"), nil)
	eventually(t, "tools to be unregistered after the budget is spent", func() bool {
		return len(hs.serverTools("fx")) == 0
	})
	// One initial start, then maxAttempts failed attempts, then nothing more.
	if got := countLines(t, starts); got != 1+maxAttempts {
		t.Errorf("server started %d times, want %d (1 + maxAttempts)", got, 1+maxAttempts)
	}
	if pids := mcptest.ChildProcesses(t, mcptest.FixtureBinary(t)); len(pids) != 0 {
		t.Errorf("fixture processes after giving up: %v", pids)
	}
	res := hs.call(modelCaller, mcpclient.PublicToolName("fx", "ping"), nil)
	if !errors.Is(res.Err, tools.ErrUnknownTool) {
		t.Errorf("ping after giving up: err = %v, want unknown tool", res.Err)
	}
}

func TestE2ECrashOnStart(t *testing.T) {
	hs := newHarness(t)
	starts := filepath.Join(t.TempDir(), "starts")
	const maxAttempts = 2
	reconnect := map[string]any{"initialDelayMs": 10, "maxDelayMs": 20, "maxAttempts": maxAttempts}
	hs.apply(
		stdioFixture(t, "soft", "soft", map[string]any{"reconnect": reconnect}, "-crash-on-start", "-starts-file", starts),
		stdioFixture(t, "strict", "strict", map[string]any{"failOnStartupError": true}, "-crash-on-start"),
	)
	// Without failOnStartupError the instance runs with no tools and keeps
	// trying; with it, the instance fails.
	hs.requireActive("soft")
	if st := hs.status("strict"); st.State != host.StateFailed ||
		!strings.HasPrefix(st.Err, "initial connection or tool synchronization failed") {
		t.Errorf("strict instance = %q (%q), want failed with its error", st.State, st.Err)
	}
	eventually(t, "the retry budget to be spent", func() bool { return countLines(t, starts) >= 1+maxAttempts })
	if tools := append(hs.serverTools("soft"), hs.serverTools("strict")...); len(tools) != 0 {
		t.Errorf("tools registered by servers that never started: %v", tools)
	}
}

func TestE2EDisposeDuringOutage(t *testing.T) {
	hs := newHarness(t)
	// A long backoff keeps the server down after the crash.
	hs.apply(stdioFixture(t, "fx", "fx", map[string]any{
		"reconnect": map[string]any{"initialDelayMs": 60000, "maxDelayMs": 60000},
	}))
	fixture := mcptest.FixtureBinary(t)
	hs.call(modelCaller, mcpclient.PublicToolName("fx", "crash"), nil)
	eventually(t, "the server to exit", func() bool { return len(mcptest.ChildProcesses(t, fixture)) == 0 })

	// During the outage the tools stay registered and fail.
	ping := mcpclient.PublicToolName("fx", "ping")
	eventually(t, "calls to fail during the outage", func() bool {
		res := hs.call(modelCaller, ping, nil)
		return res.Err != nil && !errors.Is(res.Err, tools.ErrUnknownTool)
	})
	if got := len(hs.serverTools("fx")); got != len(fixtureRawTools) {
		t.Errorf("%d tools registered during the outage, want %d", got, len(fixtureRawTools))
	}

	// Removing the instance cancels the pending reconnect and is bounded.
	start := time.Now()
	hs.apply()
	took := time.Since(start)
	t.Logf("dispose during outage took %s", took)
	// Not a speed check, the proof that dispose cancels the pending
	// reconnect: a dispose that waited for the 60s backoff would take 60s
	// (or hit the host's 15s dispose timeout, which only logs); one that
	// cancels it takes milliseconds.
	if took > 10*time.Second {
		t.Errorf("dispose during an outage took %s: it must cancel the pending reconnect", took)
	}
	if got := hs.serverTools("fx"); len(got) != 0 {
		t.Errorf("tools left after dispose: %v", got)
	}
	if st := hs.status("fx"); st.State != "" {
		t.Errorf("instance fx still in status: %+v", st)
	}
	if pids := mcptest.ChildProcesses(t, fixture); len(pids) != 0 {
		t.Errorf("a reconnect started a server after dispose: %v", pids)
	}
}

func TestE2EListChanged(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", nil))
	late := mcpclient.PublicToolName("fx", "late")
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("fx", "add-tool"), map[string]any{"name": "late"})); got != "added tool late" {
		t.Fatalf("add-tool = %q", got)
	}
	eventually(t, late+" to be registered after list_changed", func() bool {
		_, ok := hs.registry().Get(late)
		return ok
	})
	if got := text(hs.call(modelCaller, late, nil)); got != "hello from late" {
		t.Errorf("%s = %q", late, got)
	}
	want := publicNames("fx", append(slices.Clone(fixtureRawTools), "late")...)
	if diff := cmp.Diff(want, hs.serverTools("fx")); diff != "" {
		t.Errorf("tools after re-sync (-want +got):\n%s", diff)
	}
}

func TestE2ECancellationReachesServer(t *testing.T) {
	tests := []struct {
		name    string
		timeout any // toolCallTimeoutMs, or nil for the default
		cancel  bool
	}{
		{name: "caller cancels", cancel: true},
		{name: "per-call timeout", timeout: 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t)
			events := filepath.Join(t.TempDir(), "events")
			extra := map[string]any{"env": map[string]any{"FIXTURE_CANCEL_FILE": events}}
			if tc.timeout != nil {
				extra["toolCallTimeoutMs"] = tc.timeout
			}
			hs.apply(stdioFixture(t, "fx", "fx", extra))

			ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
			defer cancel()
			done := make(chan tools.Result, 1)
			go func() {
				done <- hs.callCtx(ctx, modelCaller, mcpclient.PublicToolName("fx", "slow"), map[string]any{"ms": 120000})
			}()
			waitLine(t, events, "slow started")
			if tc.cancel {
				cancel()
			}
			res := <-done
			if res.Err == nil {
				t.Fatalf("slow call ended without error: %+v", res)
			}
			if tc.cancel && !errors.Is(res.Err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", res.Err)
			}
			// notifications/cancelled reached the server, which stopped.
			waitLine(t, events, "slow cancelled")
			// The connection is still usable.
			if got := text(hs.call(modelCaller, mcpclient.PublicToolName("fx", "ping"), nil)); got != "pong" {
				t.Errorf("ping after cancellation = %q", got)
			}
		})
	}
}

func TestE2EEnvScrubbing(t *testing.T) {
	hs := newHarness(t)
	t.Setenv("SECRET_TOKEN", "hunter2")
	t.Setenv("MY_API_KEY", "k")
	t.Setenv("db_password", "p")
	t.Setenv("DSH_PROBE", "dsh")
	t.Setenv("PLAIN_PROBE", "kept")
	hs.apply(stdioFixture(t, "fx", "fx", map[string]any{
		"env": map[string]any{"EXPLICIT_PROBE": "yes", "GITHUB_TOKEN": "explicit wins"},
	}))
	lines := strings.Split(text(hs.call(modelCaller, mcpclient.PublicToolName("fx", "env"), nil)), "\n")
	env := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	for _, k := range []string{"SECRET_TOKEN", "MY_API_KEY", "db_password", "DSH_PROBE", "DSH_HOME"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%q reached the server; it must be scrubbed", k, v)
		}
	}
	for k, want := range map[string]string{"PLAIN_PROBE": "kept", "EXPLICIT_PROBE": "yes", "GITHUB_TOKEN": "explicit wins"} {
		if got, ok := env[k]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %q", k, got, ok, want)
		}
	}
}

func TestE2EStderrGoesToTheInstanceLog(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "stderr-probe", "probe", nil))
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("probe", "ping"), nil)); got != "pong" {
		t.Fatalf("ping = %q", got)
	}
	// The fixture writes "serving probe on stdio" to its stderr at start.
	eventually(t, "the server's stderr in the host log", func() bool {
		for _, line := range strings.Split(hs.logs.String(), "\n") {
			if strings.Contains(line, "serving probe on stdio") && strings.Contains(line, "instance=stderr-probe") {
				return true
			}
		}
		return false
	})
}

// A config that does not validate names the key, and a reload with it
// touches nothing that runs.
func TestE2EBadConfig(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", nil))
	before := mcptest.ChildProcesses(t, mcptest.FixtureBinary(t))
	for _, tc := range []struct {
		extra map[string]any
		want  string
	}{
		{map[string]any{"reconnect": map[string]any{"initialDelayMs": 0}},
			"reconnect.initialDelayMs: must be a positive number no greater than 2147483647"},
		{map[string]any{"reconnect": map[string]any{"initialDelayMs": 5000, "maxDelayMs": 100}},
			"reconnect.initialDelayMs: must be less than or equal to maxDelayMs"},
		{map[string]any{"url": "http://127.0.0.1:1/mcp"}, "url: not an option of the stdio transport"},
		{map[string]any{"serverName": "bad name!"}, `serverName: "bad name!" must match`},
		{map[string]any{"toolCallTimeoutMs": -1}, "toolCallTimeoutMs: must be a positive number"},
	} {
		c := &host.Composition{File: "e2e.yml", Entries: []host.Entry{
			{ID: "attachments", Name: "attachments", Config: map[string]any{"dir": hs.attDir}},
			stdioFixture(t, "fx", "fx", tc.extra),
		}}
		err := hs.h.Update(t.Context(), c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "fx") {
			t.Errorf("apply with %v = %v, want an error naming fx and saying %q", tc.extra, err, tc.want)
		}
	}
	hs.requireActive("fx")
	if after := mcptest.ChildProcesses(t, mcptest.FixtureBinary(t)); !slices.Equal(before, after) {
		t.Errorf("server processes %v became %v: a reload that does not validate restarted the instance", before, after)
	}
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("fx", "ping"), nil)); got != "pong" {
		t.Errorf("ping = %q", got)
	}
}

func TestE2EDuplicateServerName(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "first", "same", nil))
	hs.requireActive("first")

	// A second entry with the same serverName is a config error: the
	// composition is refused whole and the first instance is untouched.
	c := &host.Composition{File: "e2e.yml", Entries: []host.Entry{stdioFixture(t, "first", "same", nil), stdioFixture(t, "second", "same", nil)}}
	err := hs.h.Update(t.Context(), c)
	if want := `entry "second": config key serverName: serverName "same" is already claimed by entry "first"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Update = %v, want an error containing %q", err, want)
	}
	hs.requireActive("first")
	if st := hs.status("second"); st.State != "" {
		t.Errorf("second = %+v, want no such instance", st)
	}
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("same", "ping"), nil)); got != "pong" {
		t.Errorf("first instance's ping = %q", got)
	}

	// Replacing the holder in one edit hands the name over: the removed
	// instance is disposed before the new one starts.
	hs.apply(stdioFixture(t, "third", "same", nil))
	hs.requireActive("third")
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("same", "ping"), nil)); got != "pong" {
		t.Errorf("third instance's ping = %q", got)
	}
}

// httpModes are the ways the fixture serves Streamable HTTP: with sessions,
// and without.
var httpModes = []struct {
	name string
	args []string
}{
	{name: "sessions"},
	{name: "stateless", args: []string{"-stateless"}},
}

func TestE2EStreamableHTTP(t *testing.T) {
	for _, tc := range httpModes {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t)
			// Each server answers 401 to, and logs, any request without
			// the right header.
			guard := append([]string{"-require-header", "Authorization: Bearer s3cret"}, tc.args...)
			good := mcptest.StartHTTPFixtureServer(t, append([]string{"-name", "web"}, guard...)...)
			bad := mcptest.StartHTTPFixtureServer(t, append([]string{"-name", "web-bad"}, guard...)...)
			// The composition as a user writes it, with the token from the
			// environment.
			yml := fmt.Sprintf(`plugins:
  - id: attachments
    name: attachments
    config:
      dir: %q
  - id: web
    name: mcp-client
    config:
      serverName: web
      transport: streamable-http
      url: %s
      headers:
        Authorization: Bearer ${WEB_TOKEN}
  - id: web-bad
    name: mcp-client
    config:
      serverName: web-bad
      transport: streamable-http
      url: %s
      failOnStartupError: true
      headers:
        Authorization: Bearer wrong
`, hs.attDir, good.URL, bad.URL)
			env := map[string]string{"WEB_TOKEN": "s3cret"}
			c, err := host.ParseComposition("e2e-http.yml", []byte(yml), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
			defer cancel()
			if err := hs.h.Update(ctx, c); err != nil {
				t.Fatalf("apply: %v", err)
			}
			hs.requireActive("web")
			if diff := cmp.Diff(publicNames("web", fixtureRawTools...), hs.serverTools("web")); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			for _, c := range []struct {
				raw  string
				args any
				want string
			}{
				{"ping", nil, "pong"},
				{"shout", map[string]any{"text": "loud"}, "LOUD"},
				{"add", map[string]any{"a": 20, "b": 22}, "42"},
			} {
				res := hs.call(modelCaller, mcpclient.PublicToolName("web", c.raw), c.args)
				if got := text(res); got != c.want || res.Err != nil {
					t.Errorf("%s = %q (err %v), want %q", c.raw, got, res.Err, c.want)
				}
			}
			// A wrong token fails the strict instance and registers nothing.
			if st := hs.status("web-bad"); st.State != host.StateFailed {
				t.Errorf("web-bad = %q (%q), want failed", st.State, st.Err)
			}
			if got := hs.serverTools("web-bad"); len(got) != 0 {
				t.Errorf("tools registered without a valid token: %v", got)
			}
			if !strings.Contains(bad.Output(), "refused POST /mcp") {
				t.Errorf("the server behind a wrong token refused nothing:\n%s", bad.Output())
			}

			// Every request of the good instance, the session's end
			// included, carried the header.
			sctx, scancel := context.WithTimeout(t.Context(), e2eWait)
			defer scancel()
			if err := hs.h.Shutdown(sctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if out := good.Output(); strings.Contains(out, "refused") {
				t.Errorf("a request reached the server without the header:\n%s", out)
			}
		})
	}
}

func TestE2EStreamableHTTPServerRestart(t *testing.T) {
	// A restarted server knows nothing of the old session (HTTP 404 on it)
	// and was unreachable for a while: the supervisor re-initializes.
	for _, tc := range httpModes {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t)
			first := mcptest.StartHTTPFixtureServer(t, append([]string{"-name", "first"}, tc.args...)...)
			hs.apply(host.Entry{ID: "web", Name: "mcp-client", Config: map[string]any{
				"transport": "streamable-http", "serverName": "web", "url": first.URL,
				"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": 10},
			}})
			ping := mcpclient.PublicToolName("web", "ping")
			if got := text(hs.call(modelCaller, ping, nil)); got != "pong" {
				t.Fatalf("ping = %q", got)
			}

			first.Stop()
			res := hs.call(modelCaller, ping, nil)
			if res.Err == nil {
				t.Fatalf("ping succeeded with the server down: %q", text(res))
			}
			mcptest.StartHTTPFixtureServer(t, append([]string{"-http", first.Addr, "-name", "second"}, tc.args...)...)
			eventually(t, "calls to succeed on the restarted server", func() bool {
				return hs.call(modelCaller, ping, nil).Err == nil
			})
			if diff := cmp.Diff(publicNames("web", fixtureRawTools...), hs.serverTools("web")); diff != "" {
				t.Errorf("tools after the restart (-want +got):\n%s", diff)
			}
		})
	}
}

func TestE2EServerEverythingDisposeIsBounded(t *testing.T) {
	// server-everything ignores stdin EOF once simulated logging is on:
	// dispose must not wait go-sdk's default 5s before SIGTERM.
	hs := newHarness(t)
	command := hs.applyNode("everything", mcptest.ServerEverything, "stdio")
	if res := hs.call(modelCaller, mcpclient.PublicToolName("everything", "toggle-simulated-logging"), nil); res.Err != nil {
		t.Fatalf("toggle-simulated-logging: %v", res.Err)
	}
	start := time.Now()
	hs.apply()
	took := time.Since(start)
	t.Logf("dispose of server-everything with simulated logging on took %s", took)
	if pids := mcptest.ChildProcesses(t, command); len(pids) != 0 {
		t.Errorf("node processes left after dispose: %v", pids)
	}
	// The bound the issue requires ("a reload never waits the SDK's default
	// 5 s per server"), not a speed check: an unbounded close waits 5s
	// before its first signal; ours sends SIGTERM after terminateGrace
	// (1s), so a slow machine has 4s of margin.
	if took >= 5*time.Second {
		t.Errorf("dispose took %s: a stdio server ignoring EOF must get SIGTERM after a short grace", took)
	}
}

func TestE2EServerEverything(t *testing.T) {
	hs := newHarness(t)
	hs.applyNode("everything", mcptest.ServerEverything, "stdio")

	echo := mcpclient.PublicToolName("everything", "echo")
	if got := text(hs.call(modelCaller, echo, map[string]any{"message": "hello"})); got != "Echo: hello" {
		t.Errorf("echo = %q, want %q", got, "Echo: hello")
	}
	sum := hs.call(modelCaller, mcpclient.PublicToolName("everything", "get-sum"), map[string]any{"a": 2, "b": 3})
	if got := text(sum); sum.Err != nil || !strings.Contains(got, "5") {
		t.Errorf("get-sum(2, 3) = %q (err %v), want the sum 5", got, sum.Err)
	}

	tiny := mcpclient.PublicToolName("everything", "get-tiny-image")
	refused := hs.call(modelCaller, tiny, nil)
	if refs := images(refused); len(refs) != 0 || !strings.Contains(text(refused), "image unavailable") {
		t.Errorf("get-tiny-image without image input: refs %v, text %q; want a diagnostic and no image", refs, text(refused))
	}
	admitted := hs.call(imageCaller, tiny, nil)
	refs := images(admitted)
	if len(refs) != 1 {
		t.Fatalf("get-tiny-image with image input: %d image blocks, want 1: %+v (err %v)", len(refs), admitted.Content, admitted.Err)
	}
	rc, ref, err := hs.store().Open(refs[0].ID)
	if err != nil {
		t.Fatalf("open %s: %v", refs[0].ID, err)
	}
	defer rc.Close()
	stored, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	data := imageData(t, canonical(t, admitted))
	if len(data) != 1 {
		t.Fatalf("canonical value has %d images, want 1", len(data))
	}
	if sent, err := base64.StdEncoding.DecodeString(data[0]); err != nil || !bytes.Equal(stored, sent) {
		t.Errorf("stored image differs from the server's bytes (decode: %v)", err)
	}
	// The header only: this PNG's ancillary chunk has a CRC that Go's
	// full decoder rejects, and the bytes are the server's.
	if cfg, err := png.DecodeConfig(bytes.NewReader(stored)); err != nil || ref.MediaType != "image/png" || cfg.Width != ref.Width {
		t.Errorf("stored tiny image: %v, media type %q, width %d vs ref %d", err, ref.MediaType, cfg.Width, ref.Width)
	}
	assertNoBase64(t, admitted, data[0])
}

func TestE2EServerEverythingHTTP(t *testing.T) {
	url := mcptest.StartEverythingHTTP(t)
	hs := newHarness(t)
	hs.apply(host.Entry{ID: "everything", Name: "mcp-client", Config: map[string]any{
		"transport": "streamable-http", "serverName": "everything", "url": url,
	}})
	hs.requireActive("everything")
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("everything", "echo"), map[string]any{"message": "hello"})); got != "Echo: hello" {
		t.Errorf("echo over HTTP = %q", got)
	}
}

func TestE2EServerFilesystem(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t)
	hs.applyNode("fs", mcptest.ServerFilesystem, dir)

	file := filepath.Join(dir, "note.txt")
	const body = "written through dsh-host\nsecond line"
	if res := hs.call(modelCaller, mcpclient.PublicToolName("fs", "write_file"), map[string]any{"path": file, "content": body}); res.Err != nil {
		t.Fatalf("write_file: %v (%q)", res.Err, text(res))
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != body {
		t.Fatalf("file on disk = %q (%v), want %q", got, err, body)
	}
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("fs", "read_text_file"), map[string]any{"path": file})); got != body {
		t.Errorf("read_text_file = %q, want %q", got, body)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	listing := text(hs.call(modelCaller, mcpclient.PublicToolName("fs", "list_directory"), map[string]any{"path": dir}))
	for _, want := range []string{"[FILE] note.txt", "[DIR] sub"} {
		if !strings.Contains(listing, want) {
			t.Errorf("list_directory = %q, lacks %q", listing, want)
		}
	}
	outside := hs.call(modelCaller, mcpclient.PublicToolName("fs", "read_text_file"), map[string]any{"path": "/etc/hostname"})
	if outside.Err == nil {
		t.Errorf("read outside the allowed directory succeeded: %q", text(outside))
	}
}

// waitLine waits until the file at path has the line.
func waitLine(t *testing.T, path, line string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%q in %s", line, filepath.Base(path)), func() bool {
		b, _ := os.ReadFile(path)
		return slices.Contains(strings.Split(string(b), "\n"), line)
	})
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestE2EBeyondTheOriginal(t *testing.T) {
	t.Run("tools include and exclude", func(t *testing.T) {
		hs := newHarness(t)
		hs.apply(stdioFixture(t, "fx", "fx", map[string]any{
			"tools": map[string]any{"include": []any{"a*", "greet"}, "exclude": []any{"admin.*"}},
		}))
		if diff := cmp.Diff(publicNames("fx", "add", "add-tool", "greet"), hs.serverTools("fx")); diff != "" {
			t.Errorf("filtered tools (-want +got):\n%s", diff)
		}
	})

	t.Run("server instructions reach the prompt", func(t *testing.T) {
		hs := newHarness(t)
		hs.apply(stdioFixture(t, "fx", "fx", nil, "-instructions", "Use fx for arithmetic."))
		ctx, cancel := context.WithTimeout(t.Context(), e2eWait)
		defer cancel()
		a, err := hs.registry().Assemble(ctx, modelCaller)
		if err != nil {
			t.Fatalf("assemble: %v", err)
		}
		want := tools.Section{Name: "mcp:fx", Text: "### MCP server: fx\n\nUse fx for arithmetic."}
		if !slices.Contains(a.Sections, want) {
			t.Errorf("no prompt section %+v in %+v", want, a.Sections)
		}
	})

	t.Run("maxResultBytes cuts model text, not the value", func(t *testing.T) {
		hs := newHarness(t)
		hs.apply(stdioFixture(t, "fx", "fx", map[string]any{"maxResultBytes": 100}))
		long := strings.Repeat("abcdefghij", 50)
		res := hs.call(modelCaller, mcpclient.PublicToolName("fx", "shout"), map[string]any{"text": long})
		got := text(res)
		if strings.Contains(got, strings.ToUpper(long)) || !strings.Contains(got, strings.ToUpper(long[:50])) || !strings.Contains(got, "truncated") {
			t.Errorf("model text of %d bytes = %.200q..., want the first 100 bytes and a truncation marker", len(got), got)
		}
		blocks, _ := canonical(t, res)["content"].([]any)
		if len(blocks) != 1 || blocks[0].(map[string]any)["text"] != strings.ToUpper(long) {
			t.Errorf("canonical value lost text: %v", blocks)
		}
	})

	t.Run("startupTimeoutMs bounds an unresponsive server", func(t *testing.T) {
		hs := newHarness(t)
		start := time.Now()
		hs.apply(stdioFixture(t, "hung", "hung", map[string]any{"startupTimeoutMs": 300, "failOnStartupError": true}, "-hang"))
		t.Logf("activation of a server that never answers took %s", time.Since(start))
		if st := hs.status("hung"); st.State != host.StateFailed {
			t.Errorf("hung = %q (%q), want failed", st.State, st.Err)
		}
		// The server ignores stdin EOF: it must have been signalled.
		eventually(t, "the unresponsive server to be gone", func() bool {
			return len(mcptest.ChildProcesses(t, mcptest.FixtureBinary(t))) == 0
		})
	})
}
