package mcpfold

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// fileRig is an adapter on a real settings file.
type fileRig struct {
	reg   *tools.Registry
	cmds  *commands.Registry
	scope *host.Scope
	a     *adapter
	logs  *mcptest.SyncBuffer
}

func startOnFile(t *testing.T, path string) *fileRig {
	t.Helper()
	logs := &mcptest.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	st, err := settings.Open(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	fr := &fileRig{reg: tools.New(nil), cmds: commands.New(), logs: logs}
	register(t, fr.reg, nil, fleet...)
	fr.a, err = newAdapter(fr.reg, Defaults(), settingsGate{st: st}, "fold", logger)
	if err != nil {
		t.Fatal(err)
	}
	fr.scope = host.NewScope(context.Background(), "fold", logger)
	t.Cleanup(func() { _ = fr.scope.Dispose(0) })
	if err := fr.a.start(fr.scope, fr.cmds); err != nil {
		t.Fatal(err)
	}
	return fr
}

func (fr *fileRig) run(t *testing.T, input string) commands.Reply {
	t.Helper()
	return fr.cmds.Run(context.Background(), testCaller, "/mcp "+input)
}

func TestSettingsFilePersistsIDsAndGates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte("# my settings\nother:\n  keep: me # note\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fr := startOnFile(t, path)
	if reply := fr.run(t, "disable 2"); reply.Error || !strings.Contains(reply.Text, `server "github" (id 2) disabled`) {
		t.Fatalf("disable: %+v", reply)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# my settings\nother:\n  keep: me # note\n") {
		t.Fatalf("the rest of the file was not kept:\n%s", data)
	}
	got, ok, err := settings.Read[any](settingsStore(t, path), section)
	if err != nil || !ok {
		t.Fatalf("Read: %v %v", ok, err)
	}
	g, problems := normalize(got, nil)
	if len(problems) > 0 {
		t.Fatalf("the written section is not clean: %v", problems)
	}
	if diff := cmp.Diff(gateState{ServerIDs: map[string]int{"fs": 1, "github": 2}, Disabled: []int{2}}, g); diff != "" {
		t.Fatalf("stored (-want +got):\n%s", diff)
	}

	// A restart reads the same ids and the same gate.
	if err := fr.scope.Dispose(0); err != nil {
		t.Fatal(err)
	}
	fr2 := startOnFile(t, path)
	if !fr2.a.gate.Load().disabled("github") {
		t.Fatal("the disabled gate did not survive a restart")
	}
	if reply := fr2.run(t, "enable 2"); reply.Error || !strings.Contains(reply.Text, "enabled") {
		t.Fatalf("enable after restart: %+v", reply)
	}
}

func settingsStore(t *testing.T, path string) *settings.Store {
	t.Helper()
	st, err := settings.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSettingsFileCorruptSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	body := "mcp-adapter:\n  serverIds:\n    github: seven\n    fs: 4\n  disabled: [4, 4, banana]\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	fr := startOnFile(t, path)
	if !strings.Contains(fr.logs.String(), "settings section normalized") {
		t.Fatalf("no warning:\n%s", fr.logs)
	}
	if !fr.a.gate.Load().disabled("fs") {
		t.Fatal("the valid part of a corrupt section was lost")
	}
	// The next /mcp writes the section back normalized.
	fr.run(t, "")
	got, _, err := settings.Read[any](settingsStore(t, path), section)
	if err != nil {
		t.Fatal(err)
	}
	g, problems := normalize(got, nil)
	if len(problems) != 0 || g.ServerIDs["github"] != 1 || g.ServerIDs["fs"] != 4 {
		t.Fatalf("normalized section %+v, problems %v", g, problems)
	}
}

func TestSettingsFileDuplicateIDGoesToTheNameListedFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	// In name order fs would come first; the file lists github first.
	body := "mcp-adapter:\n  serverIds:\n    github: 4\n    fs: 4\n  disabled: [4]\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	fr := startOnFile(t, path)
	if g := fr.a.gate.Load(); !g.disabled("github") || g.disabled("fs") {
		t.Fatalf("loaded gate %+v: want github to keep id 4 (disabled), fs to lose it", *g)
	}
	// The next /mcp gives fs a new id and writes the section: the update
	// must judge the duplicate the same way.
	if reply := fr.run(t, ""); reply.Error || !strings.Contains(reply.Text, "[4] github ⏸ disabled") || !strings.Contains(reply.Text, "[1] fs (3)") {
		t.Fatalf("overview: %+v", reply)
	}
	got, _, err := settings.Read[any](settingsStore(t, path), section)
	if err != nil {
		t.Fatal(err)
	}
	g, problems := normalize(got, nil)
	if diff := cmp.Diff(gateState{ServerIDs: map[string]int{"github": 4, "fs": 1}, Disabled: []int{4}}, g); diff != "" || len(problems) != 0 {
		t.Fatalf("written section (-want +got):\n%s\nproblems %v", diff, problems)
	}

	// A hand edit that lists the other name first moves the id with it.
	if err := os.WriteFile(path, []byte("mcp-adapter:\n  serverIds: {fs: 4, github: 4}\n  disabled: [4]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, 10*time.Second, "the hand edit to disable fs, not github", func() bool {
		g := fr.a.gate.Load()
		return g.disabled("fs") && !g.disabled("github")
	})
}

func TestSettingsFileNotASection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte("mcp-adapter: just a string\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fr := startOnFile(t, path)
	if reply := fr.run(t, ""); reply.Error || !strings.Contains(reply.Text, "[1] fs (3)") {
		t.Fatalf("overview: %+v", reply)
	}
}

func TestSettingsFileHandEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	fr := startOnFile(t, path)
	fr.run(t, "") // fs=1, github=2
	if err := os.WriteFile(path, []byte("mcp-adapter:\n  serverIds: {fs: 1, github: 2}\n  disabled: [1]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, 10*time.Second, "the hand edit to disable fs", func() bool { return fr.a.gate.Load().disabled("fs") })
	if res := fr.reg.Execute(context.Background(), testCaller, "mcp__fs__read_file", []byte(`{"path":"x"}`)); res.Err == nil {
		t.Fatal("a hand-disabled server's tool ran")
	}
}
