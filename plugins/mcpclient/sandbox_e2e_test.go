package mcpclient_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestE2ENpxOfAnUncachedPackage: `npx -y pkg@latest` of a package not in
// npm's cache (a cache of the test's own) starts under the default
// sandbox with connect: [] (none): the package is fetched outside the
// sandbox first and runs offline inside, its cache read-only. The server
// is npm's server-memory, whose memory file is granted through
// MEMORY_FILE_PATH and sandbox.write, as docs/sandbox.md says.
func TestE2ENpxOfAnUncachedPackage(t *testing.T) {
	needLandlock(t)
	npx, err := exec.LookPath("npx")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("npx is required under CI")
		}
		t.Skip("no npx on PATH")
	}
	cache, data := t.TempDir(), t.TempDir()
	memory := filepath.Join(data, "memory.jsonl")
	hs := newHarness(t)
	c := &host.Composition{File: "e2e.yml", Entries: []host.Entry{{ID: "mem", Name: "mcp-client", Config: map[string]any{
		"transport": "stdio", "serverName": "mem", "command": npx,
		"args":             []any{"-y", "@modelcontextprotocol/server-memory@latest"},
		"env":              map[string]any{"npm_config_cache": cache, "MEMORY_FILE_PATH": memory},
		"sandbox":          map[string]any{"write": []any{data}, "connect": []any{}},
		"startupTimeoutMs": 240000,
	}}}}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := hs.h.Update(ctx, c); err != nil {
		t.Fatalf("apply: %v", err)
	}
	hs.requireActive("mem")
	if d := hs.status("mem").Detail; !strings.Contains(d, "sandboxed (landlock v") || !strings.Contains(d, "connect none") {
		t.Errorf("detail = %q, want sandboxed with connect none", d)
	}
	res := hs.call(modelCaller, mcpclient.PublicToolName("mem", "create_entities"), map[string]any{
		"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []any{"wrote the first program"}}},
	})
	if res.Err != nil {
		t.Fatalf("create_entities: %v (%s)", res.Err, text(res))
	}
	if b, err := os.ReadFile(memory); err != nil || !strings.Contains(string(b), "Ada") {
		t.Errorf("memory file = %q, %v; want Ada in it", b, err)
	}
	// The rules it ran under: npm's cache is not writable, only the
	// package's node_modules in it readable.
	cfg := mcpclient.Defaults()
	cfg.ServerName, cfg.Transport, cfg.Command = "mem", mcpclient.TransportStdio, npx
	cfg.Args = []string{"-y", "@modelcontextprotocol/server-memory@latest"}
	cfg.Env = map[string]string{"npm_config_cache": cache}
	rep, err := mcpclient.CheckSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Launch.Rules
	if r.Writable(filepath.Join(cache, "_cacache", "x")) || r.Readable(filepath.Join(cache, "_cacache", "x")) {
		t.Errorf("npm's cache is granted: read %q, write %q", r.Read, r.Write)
	}
	if !slices.ContainsFunc(r.Read, func(p string) bool {
		return strings.HasPrefix(p, filepath.Join(cache, "_npx")) && strings.HasSuffix(p, "/node_modules")
	}) {
		t.Errorf("the package's node_modules is not granted: read %q", r.Read)
	}
}
