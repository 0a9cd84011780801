package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNpxPackages(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
		ok   bool
	}{
		{[]string{"-y", "@modelcontextprotocol/server-memory@latest"}, []string{"@modelcontextprotocol/server-memory@latest"}, true},
		{[]string{"--yes", "pkg", "--flag-of-the-server", "x"}, []string{"pkg"}, true},
		{[]string{"-p", "a", "--package=b", "cmd", "arg"}, []string{"a", "b"}, true},
		{[]string{"-c", "echo hi"}, nil, false},
		{[]string{"-y"}, nil, false},
		{[]string{"--package"}, nil, false},
	} {
		got, ok := npxPackages(tt.args)
		if ok != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("npxPackages(%q) = %q, %v; want %q, %v", tt.args, got, ok, tt.want, tt.ok)
		}
	}
}

// TestGoRunIsBuiltOutside: `go run PKG ARGS` is built outside the
// sandbox, and the server is the binary with ARGS, granted neither Go's
// build cache nor its module cache: a compromised server cannot poison
// what later unsandboxed builds use.
func TestGoRunIsBuiltOutside(t *testing.T) {
	needLandlock(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "run", "-tags", "netgo", "./testdata/mcpfixture", "-name", "x")
	cmd.Env = os.Environ()
	cmd.Dir = root
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prep, err := Prepare(ctx, cmd, Config{Mode: ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(cmd.Path, "/mcpfixture") || !slices.Equal(cmd.Args[1:], []string{"-name", "x"}) {
		t.Fatalf("cmd = %s %q, want the built fixture with its arguments", cmd.Path, cmd.Args)
	}
	built := cmd.Path
	l, err := Start(cmd, Config{Mode: ModeAuto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Cleanup()
	l.After(prep.Cleanup)
	out, _ := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE").Output()
	for _, c := range strings.Fields(string(out)) {
		if l.Rules.Readable(c) || l.Rules.Writable(c) {
			t.Errorf("%s is granted (read %q, write %q)", c, l.Rules.Read, l.Rules.Write)
		}
	}
	if !l.Rules.Readable(built) {
		t.Errorf("the built binary %s is not granted", built)
	}
	l.Cleanup()
	if _, err := os.Stat(built); !os.IsNotExist(err) {
		t.Errorf("the built binary survived Cleanup: %v", err)
	}
}

// TestPrepareFailureNamesTheCommand: a build that fails stops the start
// with the build's own words.
func TestPrepareFailureNamesTheCommand(t *testing.T) {
	needLandlock(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\nfunc main() { nope }\n"), 0o600)
	cmd := exec.Command(goBin, "run", "main.go")
	cmd.Env, cmd.Dir = os.Environ(), dir
	_, err = Prepare(context.Background(), cmd, Config{})
	if err == nil || !strings.Contains(err.Error(), "build main.go before the sandboxed start") || !strings.Contains(err.Error(), "undefined: nope") {
		t.Errorf("Prepare = %v, want the build's error", err)
	}
}

// TestOfflineNpmCacheIsReadOnly: once Prepare filled npm's cache, npx
// runs offline and the cache is granted to read only.
func TestOfflineNpmCacheIsReadOnly(t *testing.T) {
	home := t.TempDir()
	cache := filepath.Join(home, "npmcache")
	for _, offline := range []bool{false, true} {
		cmd := exec.Command("/usr/bin/npx", "-y", "pkg")
		cmd.Env = []string{"HOME=" + home, "npm_config_cache=" + cache}
		if offline {
			cmd.Env = append(cmd.Env, "npm_config_offline=true")
		}
		g := defaultGrants(cmd, t.TempDir(), home, nil)
		if w := slices.Contains(g.write, cache); w == offline {
			t.Errorf("offline %v: cache writable %v (write %q)", offline, w, g.write)
		}
		if !slices.Contains(append(g.read, g.write...), cache) {
			t.Errorf("offline %v: cache not granted at all", offline)
		}
	}
}
