package mcpfold_test

// End-to-end: a real host.Host runs three mcp-client instances against real
// MCP server processes (the in-repo fixture twice, under two serverNames,
// and @modelcontextprotocol/server-everything over stdio) next to mcp-fold,
// with the settings service on a file in a temporary directory. The test
// acts only through the host's services, as the binary and the model do.

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

const e2eWait = 60 * time.Second

var model = tools.Caller{Kind: "test", ID: "e2e", ImageInput: true}

// e2eHost is one host over the given entries; stop shuts it down and checks
// that no fixture process is left.
type e2eHost struct {
	t    *testing.T
	h    *host.Host
	logs *mcptest.SyncBuffer
	once sync.Once
	// exes are the server executables that must have no process left once
	// the host has shut down.
	exes []string
}

func startHost(t *testing.T, entries []host.Entry, exes ...string) *e2eHost {
	t.Helper()
	logs := &mcptest.SyncBuffer{}
	eh := &e2eHost{t: t, logs: logs, exes: exes, h: host.New(&host.Options{
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DisposeTimeout: 15 * time.Second,
	})}
	t.Cleanup(eh.stop)
	eh.apply(entries)
	return eh
}

func (eh *e2eHost) apply(entries []host.Entry) {
	eh.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	if err := eh.h.Update(ctx, &host.Composition{File: "e2e.yml", Entries: entries}); err != nil {
		eh.t.Fatalf("apply: %v", err)
	}
	for _, e := range entries {
		for _, st := range eh.h.Status() {
			if st.ID == e.ID && st.State != host.StateActive {
				eh.t.Fatalf("instance %s is %s (%s)\nlog:\n%s", st.ID, st.State, st.Err, eh.logs)
			}
		}
	}
}

func (eh *e2eHost) stop() {
	eh.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
		defer cancel()
		if err := eh.h.Shutdown(ctx); err != nil {
			eh.t.Errorf("shutdown: %v", err)
		}
		for _, exe := range eh.exes {
			if pids := mcptest.ChildProcesses(eh.t, exe); len(pids) > 0 {
				eh.t.Errorf("%s processes left after shutdown: %v", filepath.Base(exe), pids)
			}
		}
		if eh.t.Failed() {
			eh.t.Logf("host log:\n%s", eh.logs)
		}
	})
}

func (eh *e2eHost) registry() *tools.Registry {
	eh.t.Helper()
	reg, ok := host.Lookup(eh.h, tools.Key)
	if !ok {
		eh.t.Fatal("no tools service")
	}
	return reg
}

func (eh *e2eHost) command(line string) commands.Reply {
	eh.t.Helper()
	cmds, ok := host.Lookup(eh.h, commands.Key)
	if !ok {
		eh.t.Fatal("no commands service")
	}
	return cmds.Run(context.Background(), model, line)
}

func (eh *e2eHost) call(name string, args any) tools.Result {
	eh.t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		eh.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	return eh.registry().Execute(ctx, model, name, b)
}

// prompt returns the assembled tool names and the OpenAI-compatible tools
// JSON.
func (eh *e2eHost) prompt() ([]string, []byte) {
	eh.t.Helper()
	asm, err := eh.registry().Assemble(context.Background(), model)
	if err != nil {
		eh.t.Fatal(err)
	}
	b, err := asm.ToolsJSON()
	if err != nil {
		eh.t.Fatal(err)
	}
	var names []string
	for _, s := range asm.Tools {
		names = append(names, s.Name)
	}
	return names, b
}

func resultText(res tools.Result) string {
	var parts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func TestE2EThreeServers(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	dir := t.TempDir()
	settingsFile := filepath.Join(dir, "settings.yaml")
	fixture := mcptest.FixtureBinary(t)
	node, everything := mcptest.NodeServer(t, mcptest.ServerEverything, "stdio")

	base := []host.Entry{
		{ID: "attachments", Name: "attachments", Config: map[string]any{"dir": filepath.Join(dir, "attachments")}},
		{ID: "settings", Name: "settings", Config: map[string]any{"file": settingsFile}},
		{ID: "alpha", Name: "mcp-client", Config: map[string]any{"transport": "stdio", "serverName": "alpha", "command": fixture, "args": []any{"-name", "alpha"}}},
		{ID: "beta", Name: "mcp-client", Config: map[string]any{"transport": "stdio", "serverName": "beta", "command": fixture, "args": []any{"-name", "beta"}}},
		{ID: "everything", Name: "mcp-client", Config: map[string]any{"transport": "stdio", "serverName": "everything", "command": node, "args": toAny(everything)}},
	}
	fold := host.Entry{ID: "fold", Name: "mcp-fold", Config: map[string]any{}}
	withFold := append(slices.Clone(base), fold)

	// Unfolded first: every MCP schema is in the prompt.
	eh := startHost(t, base, fixture, node)
	unfoldedNames, unfoldedJSON := eh.prompt()
	unfolded := len(unfoldedJSON)
	mcpCount := 0
	for _, n := range unfoldedNames {
		if strings.HasPrefix(n, "mcp__") {
			mcpCount++
		}
	}
	for _, server := range []string{"alpha", "beta", "everything"} {
		if !slices.ContainsFunc(unfoldedNames, func(n string) bool { return strings.HasPrefix(n, "mcp__"+server+"__") }) {
			t.Fatalf("server %s has no tools in the prompt: %v", server, unfoldedNames)
		}
	}

	// Adding the fold is a reload that touches no other instance.
	eh.apply(withFold)
	foldedNames, foldedJSON := eh.prompt()
	folded := len(foldedJSON)
	var native []string
	for _, n := range unfoldedNames {
		if !strings.HasPrefix(n, "mcp__") {
			native = append(native, n)
		}
	}
	wantFolded := append(slices.Clone(native), "mcp_call", "mcp_list")
	slices.Sort(wantFolded)
	if diff := cmp.Diff(wantFolded, foldedNames); diff != "" {
		t.Fatalf("folded prompt (-want +got):\n%s", diff)
	}
	t.Logf("assembled tools JSON: %d MCP tools from 3 servers: unfolded %d bytes, folded %d bytes (%.1f%%)",
		mcpCount, unfolded, folded, 100*float64(folded)/float64(unfolded))
	if folded >= unfolded/4 {
		t.Fatalf("folding saved too little: %d → %d bytes", unfolded, folded)
	}

	// mcp_list → mcp_call round trip, as a model would do it.
	res := eh.call("mcp_list", map[string]any{})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	catalog := resultText(res)
	for _, w := range []string{`"server": "alpha"`, `"server": "beta"`, `"server": "everything"`, `"name": "mcp__beta__greet"`, `"name": "mcp__everything__echo"`} {
		if !strings.Contains(catalog, w) {
			t.Fatalf("catalog lacks %s:\n%s", w, catalog)
		}
	}
	search := resultText(eh.call("mcp_list", map[string]any{"query": "echo message"}))
	if !strings.Contains(search, `"name": "mcp__everything__echo"`) {
		t.Fatalf("search did not find echo:\n%s", search)
	}
	schema := resultText(eh.call("mcp_list", map[string]any{"tool": "mcp__everything__echo"}))
	if !strings.Contains(schema, `"message"`) {
		t.Fatalf("expanded schema lacks message:\n%s", schema)
	}
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__beta__greet", "arguments": map[string]any{"name": "fold"}})); got != "Hello, fold!" {
		t.Fatalf("mcp_call greet = %q", got)
	}
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__everything__echo", "arguments": map[string]any{"message": "hi"}})); got != "Echo: hi" {
		t.Fatalf("mcp_call echo = %q", got)
	}
	// A real server's schema catches bad arguments before dispatch.
	bad := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__everything__echo", "arguments": map[string]any{}}))
	if !strings.Contains(bad, "do not match its input schema") || !strings.Contains(bad, "message") {
		t.Fatalf("mcp_call with missing arguments:\n%s", bad)
	}
	// Images project exactly as a native call.
	native1 := eh.call("mcp__alpha__image", map[string]any{})
	viaFold := eh.call("mcp_call", map[string]any{"tool": "mcp__alpha__image"})
	if native1.Err != nil || viaFold.Err != nil {
		t.Fatalf("image: %v / %v", native1.Err, viaFold.Err)
	}
	if diff := cmp.Diff(native1.Content, viaFold.Content); diff != "" {
		t.Fatalf("image content differs (-native +mcp_call):\n%s", diff)
	}
	// A tool error is wrapped.
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__alpha__fail"})); !strings.HasPrefix(got, `MCP tool "mcp__alpha__fail" failed: `) {
		t.Fatalf("mcp_call fail = %q", got)
	}

	// A real re-sync (the server adds a tool and sends list_changed) leaves
	// the folded prompt byte for byte the same: the prompt cache holds.
	_, before := eh.prompt()
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__alpha__add-tool", "arguments": map[string]any{"name": "late"}})); got != "added tool late" {
		t.Fatalf("add-tool = %q", got)
	}
	mcptest.WaitFor(t, e2eWait, "the re-synced tool", func() bool { _, ok := eh.registry().Get("mcp__alpha__late"); return ok })
	if _, after := eh.prompt(); string(before) != string(after) {
		t.Fatalf("the folded prompt changed across a re-sync:\nbefore %s\nafter  %s", before, after)
	}
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__alpha__late"})); got != "hello from late" {
		t.Fatalf("the re-synced tool through mcp_call = %q", got)
	}

	// /mcp gives every server an id; disable beta.
	overview := eh.command("/mcp")
	if overview.Error {
		t.Fatalf("/mcp: %s", overview.Text)
	}
	m := regexp.MustCompile(`(?m)^\[(\d+)\] beta \(`).FindStringSubmatch(overview.Text)
	if m == nil {
		t.Fatalf("no id for beta:\n%s", overview.Text)
	}
	id := m[1]
	if !strings.Contains(overview.Text, "folding ACTIVE — folded ") {
		t.Fatalf("footer:\n%s", overview.Text)
	}
	if r := eh.command("/mcp disable " + id); r.Error {
		t.Fatalf("disable: %s", r.Text)
	}
	assertBetaDisabled(t, eh, id)

	data, err := os.ReadFile(settingsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "mcp-adapter:") || !strings.Contains(string(data), "beta: "+id) {
		t.Fatalf("settings file:\n%s", data)
	}

	// Restart the host: the ids and the gate come back from settings.yaml.
	eh.stop()
	eh2 := startHost(t, withFold, fixture, node)
	assertBetaDisabled(t, eh2, id)
	if r := eh2.command("/mcp"); !strings.Contains(r.Text, "["+id+"] beta ⏸ disabled") {
		t.Fatalf("/mcp after restart:\n%s", r.Text)
	}
	if r := eh2.command("/mcp enable " + id); r.Error {
		t.Fatalf("enable: %s", r.Text)
	}
	if got := resultText(eh2.call("mcp_call", map[string]any{"tool": "mcp__beta__greet"})); got != "Hello, World!" {
		t.Fatalf("mcp_call after enable = %q", got)
	}
	if r := eh2.command("/mcp"); !strings.Contains(r.Text, "["+id+"] beta (") {
		t.Fatalf("beta lost its id across enable:\n%s", r.Text)
	}
}

func assertBetaDisabled(t *testing.T, eh *e2eHost, id string) {
	t.Helper()
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__beta__greet"})); !strings.Contains(got, `server "beta" is disabled`) || !strings.Contains(got, "/mcp enable "+id) {
		t.Fatalf("mcp_call to a disabled server = %q", got)
	}
	if res := eh.call("mcp__beta__greet", map[string]any{}); res.Err == nil {
		t.Fatal("a direct call to a disabled server's tool ran")
	}
	if got := resultText(eh.call("mcp_list", map[string]any{})); strings.Contains(got, "mcp__beta__") {
		t.Fatalf("the catalog shows a disabled server:\n%s", got)
	}
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__alpha__ping"})); got != "pong" {
		t.Fatalf("another server was affected: %q", got)
	}
}

// TestE2EServersNamedWithTheSeparator: serverNames may contain "__", so a
// tool's name does not tell its server; two real servers "a__b" and
// "a__c" (whose tools all read mcp__a__...) stay two servers in the
// catalog and /mcp, with their own ids, and disabling one leaves the other.
func TestE2EServersNamedWithTheSeparator(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	dir := t.TempDir()
	fixture := mcptest.FixtureBinary(t)
	entries := []host.Entry{
		{ID: "settings", Name: "settings", Config: map[string]any{"file": filepath.Join(dir, "settings.yaml")}},
		{ID: "b", Name: "mcp-client", Config: map[string]any{"transport": "stdio", "serverName": "a__b", "command": fixture, "args": []any{"-name", "b"}}},
		{ID: "c", Name: "mcp-client", Config: map[string]any{"transport": "stdio", "serverName": "a__c", "command": fixture, "args": []any{"-name", "c"}}},
		{ID: "fold", Name: "mcp-fold", Config: map[string]any{}},
	}
	eh := startHost(t, entries, fixture)

	servers := func() []string {
		t.Helper()
		res := eh.call("mcp_list", map[string]any{})
		cat, ok := res.Value.(mcpfold.Catalog)
		if res.Err != nil || !ok {
			t.Fatalf("mcp_list: %v (%T)", res.Err, res.Value)
		}
		var out []string
		for _, s := range cat.Servers {
			out = append(out, s.Server)
			for _, tl := range s.Tools {
				if !strings.HasPrefix(tl.Name, "mcp__"+s.Server+"__") {
					t.Fatalf("server %s lists %s", s.Server, tl.Name)
				}
			}
		}
		return out
	}
	if diff := cmp.Diff([]string{"a__b", "a__c"}, servers()); diff != "" {
		t.Fatalf("catalog servers (-want +got):\n%s", diff)
	}

	overview := eh.command("/mcp")
	ids := map[string]string{}
	for _, s := range []string{"a__b", "a__c"} {
		m := regexp.MustCompile(`(?m)^\[(\d+)\] ` + s + ` \((\d+)\)$`).FindStringSubmatch(overview.Text)
		if m == nil || m[2] != strconv.Itoa(len(mcptest.FixtureTools())) {
			t.Fatalf("/mcp has no line for %s with its %d tools:\n%s", s, len(mcptest.FixtureTools()), overview.Text)
		}
		ids[s] = m[1]
	}
	if ids["a__b"] == ids["a__c"] {
		t.Fatalf("both servers carry id %s:\n%s", ids["a__b"], overview.Text)
	}

	if r := eh.command("/mcp disable " + ids["a__b"]); r.Error || !strings.Contains(r.Text, `server "a__b"`) {
		t.Fatalf("disable: %s", r.Text)
	}
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__a__b__ping"})); !strings.Contains(got, `server "a__b" is disabled`) {
		t.Fatalf("mcp_call to the disabled server = %q", got)
	}
	if res := eh.call("mcp__a__b__ping", map[string]any{}); res.Err == nil {
		t.Fatal("a direct call to the disabled server's tool ran")
	}
	if got := resultText(eh.call("mcp_call", map[string]any{"tool": "mcp__a__c__ping"})); got != "pong" {
		t.Fatalf("mcp_call to the other server = %q", got)
	}
	if res := eh.call("mcp__a__c__ping", map[string]any{}); res.Err != nil {
		t.Fatalf("a direct call to the other server: %v", res.Err)
	}
	if diff := cmp.Diff([]string{"a__c"}, servers()); diff != "" {
		t.Fatalf("catalog servers after disable (-want +got):\n%s", diff)
	}
	names, _ := eh.prompt()
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "mcp__a__") }) {
		t.Fatalf("an MCP tool stayed in the prompt: %v", names)
	}
	overview = eh.command("/mcp")
	if !strings.Contains(overview.Text, "["+ids["a__b"]+"] a__b ⏸ disabled") || !strings.Contains(overview.Text, "["+ids["a__c"]+"] a__c (") {
		t.Fatalf("/mcp after disable:\n%s", overview.Text)
	}
}
