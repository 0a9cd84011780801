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
		cmd  int
		ok   bool
	}{
		{[]string{"-y", "@modelcontextprotocol/server-memory@latest"}, []string{"@modelcontextprotocol/server-memory@latest"}, 1, true},
		{[]string{"--yes", "pkg", "--flag-of-the-server", "x"}, []string{"pkg"}, 1, true},
		{[]string{"-p", "a", "--package=b", "cmd", "arg"}, []string{"a", "b"}, 3, true},
		{[]string{"-p", "a"}, []string{"a"}, 2, true},
		{[]string{"-c", "echo hi"}, nil, 2, false},
		{[]string{"-y"}, nil, 1, false},
		{[]string{"--package"}, nil, 1, false},
	} {
		got, cmd, ok := NpxPackages(tt.args)
		if ok != tt.ok || !slices.Equal(got, tt.want) || cmd != tt.cmd {
			t.Errorf("NpxPackages(%q) = %q, %d, %v; want %q, %d, %v", tt.args, got, cmd, ok, tt.want, tt.cmd, tt.ok)
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

// TestPackageBin: the program npx runs of a package: its only bin, or
// the one named as the package; else an error naming --package.
func TestPackageBin(t *testing.T) {
	nm := filepath.Join(t.TempDir(), "node_modules")
	write := func(name, bin string) {
		os.MkdirAll(filepath.Join(nm, name), 0o755)
		os.WriteFile(filepath.Join(nm, name, "package.json"), []byte(`{"name":"`+name+`","bin":`+bin+`}`), 0o644)
	}
	write("@s/one", `"dist/index.js"`)
	write("two", `{"other":"a.js"}`)
	write("many", `{"x":"a.js","many":"b.js"}`)
	write("none", `{"x":"a.js","y":"b.js"}`)
	// A hostile package naming a program outside .bin is refused by npxBin.
	write("evil", `{"../../../bin/sh":"a.js"}`)
	bin := filepath.Join(nm, ".bin")
	os.MkdirAll(bin, 0o755)
	if _, _, err := npxBin(bin, []string{"evil"}, []string{"-y", "evil"}, 1); err == nil || !strings.Contains(err.Error(), "is not a name in") {
		t.Errorf("npxBin of a bin outside .bin = %v, want refused", err)
	}
	for spec, want := range map[string]string{"@s/one@latest": "one", "two": "other", "many@1.2.3": "many", "none": ""} {
		got, err := packageBin(nm, spec)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("packageBin(%s) = %q, %v; want %q", spec, got, err, want)
		}
		if want == "" && (err == nil || !strings.Contains(err.Error(), "npx --package")) {
			t.Errorf("packageBin(%s) error = %v, want the way out named", spec, err)
		}
	}
}

// TestNpxFetchRunsNoInstallScripts: the fetch before a sandboxed npx start
// runs with the host's rights, so a package's install scripts must not
// run in it; the package's program is still found and run inside.
func TestNpxFetchRunsNoInstallScripts(t *testing.T) {
	needLandlock(t)
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("no npx on PATH")
	}
	src, tmp := t.TempDir(), t.TempDir()
	marker := filepath.Join(tmp, "postinstall-ran")
	files := map[string]string{
		"package.json": `{"name":"dsh-hostile","version":"1.0.0","bin":{"dsh-hostile":"srv.js"},` +
			`"scripts":{"preinstall":"touch ` + marker + `","postinstall":"touch ` + marker + `"}}`,
		"srv.js": "#!/usr/bin/env node\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pack := exec.Command("npm", "pack", "--pack-destination", tmp, src)
	pack.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(tmp, "cache"))
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	cmd := exec.Command(npx, "-y", "--package="+filepath.Join(tmp, "dsh-hostile-1.0.0.tgz"), "dsh-hostile")
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(tmp, "cache"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prep, err := Prepare(ctx, cmd, Config{Mode: ModeAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Cleanup()
	if filepath.Base(cmd.Path) != "dsh-hostile" {
		t.Errorf("cmd = %s, want the package's program", cmd.Path)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the package's install script ran outside the sandbox")
	}
}

// TestStrictRefusesAFormRunAsItIs: an npx or go run form that dsh-host
// cannot prepare runs as it is with a cache it may write, which later
// unsandboxed runs read: auto warns, strict refuses.
func TestStrictRefusesAFormRunAsItIs(t *testing.T) {
	needLandlock(t)
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("no npx on PATH")
	}
	cmd := exec.Command(npx, "-c", "echo hi")
	prep, err := Prepare(context.Background(), cmd, Config{Mode: ModeAuto})
	if err != nil || prep.Warning == "" {
		t.Errorf("auto: %+v, %v; want a warning", prep, err)
	}
	if _, err := Prepare(context.Background(), cmd, Config{Mode: ModeStrict}); err == nil || !strings.Contains(err.Error(), "sandbox.mode is strict") {
		t.Errorf("strict: %v, want a refusal", err)
	}
}
