package mcpclient_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// needLandlock skips a test on a system without Landlock, and fails it
// under CI=true.
func needLandlock(t *testing.T) {
	t.Helper()
	if abi, why := sandbox.Support(); abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock is required under CI=true: %s", why)
		}
		t.Skip(why)
	}
}

// TestE2ESandboxedServerFilesystem: npm's server-filesystem, sandboxed
// with its directory as a write grant, serves it; told to serve a second
// directory that the sandbox does not grant, it would follow a symlink
// into it (and read it directly), and the kernel refuses both.
func TestE2ESandboxedServerFilesystem(t *testing.T) {
	needLandlock(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("not for the server"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t)
	command, argv := mcptest.NodeServer(t, mcptest.ServerFilesystem, dir, outside)
	hs.apply(host.Entry{ID: "fs", Name: "mcp-client", Config: map[string]any{
		"transport": "stdio", "serverName": "fs", "command": command, "args": toAny(argv),
		"sandbox": map[string]any{"mode": "strict", "write": []any{dir}},
	}})
	hs.requireActive("fs")
	tool := func(name string) string { return mcpclient.PublicToolName("fs", name) }

	file := filepath.Join(dir, "note.txt")
	if res := hs.call(modelCaller, tool("write_file"), map[string]any{"path": file, "content": "inside"}); res.Err != nil {
		t.Fatalf("write_file in the granted directory: %v (%q)", res.Err, text(res))
	}
	if got := text(hs.call(modelCaller, tool("read_text_file"), map[string]any{"path": file})); got != "inside" {
		t.Errorf("read_text_file = %q, want inside", got)
	}
	for _, p := range []string{filepath.Join(dir, "link.txt"), secret} {
		res := hs.call(modelCaller, tool("read_text_file"), map[string]any{"path": p})
		if res.Err == nil || !strings.Contains(text(res)+res.Err.Error(), "EACCES") {
			t.Errorf("read_text_file %s = %q, %v; want the kernel's EACCES", p, text(res), res.Err)
		}
	}
}

// TestE2ESandboxedServerEverything: npm's server-everything runs under
// strict with nothing granted beyond the defaults: its tools answer and
// its documents (read from its package) are served.
func TestE2ESandboxedServerEverything(t *testing.T) {
	needLandlock(t)
	hs := newHarness(t)
	command, argv := mcptest.NodeServer(t, mcptest.ServerEverything, "stdio")
	hs.apply(host.Entry{ID: "ev", Name: "mcp-client", Config: map[string]any{
		"transport": "stdio", "serverName": "ev", "command": command, "args": toAny(argv),
		"sandbox": map[string]any{"mode": "strict"},
	}})
	hs.requireActive("ev")
	if got := text(hs.call(modelCaller, mcpclient.PublicToolName("ev", "echo"), map[string]any{"message": "hi"})); !strings.Contains(got, "hi") {
		t.Errorf("echo = %q", got)
	}
}
