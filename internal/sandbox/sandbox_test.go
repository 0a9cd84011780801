package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

func TestMain(m *testing.M) {
	Main()
	if name := os.Getenv(actEnv); name != "" {
		runAct(name) // a server started by a test (act)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// noLandlock makes Support report a kernel without Landlock for the test.
func noLandlock(t *testing.T) {
	old := Support
	Support = func() (int, string) { return 0, "this Linux kernel does not offer Landlock (simulated)" }
	t.Cleanup(func() { Support = old })
}

// TestStrictRefusesWithoutLandlock: strict on a kernel without Landlock
// is an error and leaves the command alone; auto starts it as it was,
// with a warning naming the reason.
func TestStrictRefusesWithoutLandlock(t *testing.T) {
	noLandlock(t)
	cmd := exec.Command("true")
	if _, err := Start(cmd, Config{Mode: ModeStrict}, nil); err == nil || !strings.Contains(err.Error(), "sandbox.mode is strict") || !strings.Contains(err.Error(), "simulated") {
		t.Errorf("strict: Start = %v, want a refusal naming the reason", err)
	}
	l, err := Start(cmd, Config{Mode: ModeAuto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Sandboxed || !strings.Contains(l.Warning, "unsandboxed") || !strings.Contains(l.Warning, "simulated") {
		t.Errorf("auto: launch = %+v, want unsandboxed with a warning", l)
	}
	if cmd.Args[0] != "true" || len(cmd.Args) != 1 {
		t.Errorf("auto without Landlock rewrote the command: %q", cmd.Args)
	}
}

// TestUnhookedBinaryRefused: a binary that does not call Main would run
// itself (a test binary: its tests) instead of the server; Start refuses.
func TestUnhookedBinaryRefused(t *testing.T) {
	if abi, _ := Support(); abi == 0 {
		t.Skip("no Landlock: Start never re-executes here")
	}
	hooked.Store(false)
	defer hooked.Store(true)
	if _, err := Start(exec.Command("true"), Config{Mode: ModeAuto}, nil); err == nil || !strings.Contains(err.Error(), "sandbox.Main") {
		t.Errorf("Start = %v, want a refusal naming the hook", err)
	}
}

// TestStartRewritesCommand: the launch re-executes this binary with the
// marker, the spec in the environment and a TMPDIR of its own, removed by
// Cleanup; a grant that does not exist is an error naming its key.
func TestStartRewritesCommand(t *testing.T) {
	if abi, _ := Support(); abi == 0 {
		t.Skip("no Landlock: Start never re-executes here")
	}
	home := t.TempDir()
	cmd := exec.Command("true", "x")
	// A composition's env may name the spec too: its own must not reach
	// the launcher beside (or instead of) the host's.
	forged := specEnv + `={"Path":"/bin/sh","Read":["/"],"Write":["/"]}`
	cmd.Env = []string{"HOME=" + home, forged, "TMPDIR=/elsewhere", "PATH=" + os.Getenv("PATH")}
	cmd.Dir = t.TempDir()
	self, _ := os.Executable()
	l, err := Start(cmd, Config{Mode: ModeAuto, Connect: Ports{List: []uint16{443}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := slices.IndexFunc(cmd.Env, func(kv string) bool { return kv == forged }); n >= 0 {
		t.Errorf("the composition's %s reached the launcher: %q", specEnv, cmd.Env)
	}
	if cmd.Path != self || !slices.Equal(cmd.Args, []string{self, marker}) {
		t.Errorf("cmd = %s %q, want this binary with the marker", cmd.Path, cmd.Args)
	}
	tmp := childEnv(cmd.Env, "TMPDIR")
	if tmp == "/elsewhere" || !strings.Contains(childEnv(cmd.Env, specEnv), tmp) {
		t.Errorf("TMPDIR = %q, want the server's own, granted", tmp)
	}
	if !strings.Contains(l.Report, "connect 443, bind none") {
		t.Errorf("report = %q", l.Report)
	}
	l.Cleanup()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the temporary directory survived Cleanup: %v", err)
	}

	_, err = Start(exec.Command("true"), Config{Mode: ModeAuto, Write: []string{"~/nope"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "sandbox.write[0]: "+filepath.Join(mustHome(t), "nope")+" cannot be granted: no such file") {
		t.Errorf("Start = %v, want the missing write grant named", err)
	}
}

func mustHome(t *testing.T) string {
	h, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	return h
}

// TestDefaultGrantsKeepTheHomeOut: a server started in the home directory
// does not get it as its working directory, and none of the defaults is
// the home or holds it.
func TestDefaultGrantsKeepTheHomeOut(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command("true")
	g := defaultGrants(cmd, home, home, nil)
	for _, p := range append(g.read, g.write...) {
		if p == home || strings.HasPrefix(home, p+"/") {
			t.Errorf("grant %s holds the home %s", p, home)
		}
	}
	if len(g.notes) == 0 {
		t.Error("no note says the working directory was left out")
	}

	// Programs installed in the home: ~/bin/srv, ~/.cargo/bin/srv (beside
	// ~/.cargo/credentials.toml), a script in the home itself.
	secrets := []string{filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(home, ".cargo", "credentials.toml")}
	for _, f := range append(secrets, filepath.Join(home, "bin", "srv"), filepath.Join(home, ".cargo", "bin", "srv"), filepath.Join(home, "s.js")) {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	for _, cmd := range []*exec.Cmd{
		exec.Command(filepath.Join(home, "bin", "srv")),
		exec.Command(filepath.Join(home, ".cargo", "bin", "srv")),
		exec.Command("true", filepath.Join(home, "s.js")),
	} {
		g := defaultGrants(cmd, work, home, nil)
		for _, p := range append(g.read, g.write...) {
			for _, secret := range secrets {
				if p == secret || strings.HasPrefix(secret, p+"/") {
					t.Errorf("%s: grant %s reaches %s", cmd.Args, p, secret)
				}
			}
		}
	}
}

func TestPortsYAML(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want Ports
		err  string
	}{
		{"[443, 8080]", Ports{List: []uint16{443, 8080}}, ""},
		{"[]", Ports{List: []uint16{}}, ""},
		{"any", Ports{Any: true}, ""},
		{"[0]", Ports{}, "not a TCP port"},
		{"[any]", Ports{}, "not a TCP port"},
		{"all", Ports{}, "must be a list of TCP ports"},
		{"{a: 1}", Ports{}, "must be a list of TCP ports"},
	} {
		var p Ports
		err := yaml.Unmarshal([]byte(tt.src), &p)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil || p.Any != tt.want.Any || !slices.Equal(p.List, tt.want.List) {
			t.Errorf("%s = %+v, %v; want %+v", tt.src, p, err, tt.want)
		}
	}
}

func TestEffectiveMode(t *testing.T) {
	if m := (Config{}).EffectiveMode(); m != DefaultMode {
		t.Errorf("empty block: %s, want %s", m, DefaultMode)
	}
	if m := (Config{Read: []string{"/x"}}).EffectiveMode(); m != ModeAuto {
		t.Errorf("grants without a mode: %s, want auto", m)
	}
	if m := (Config{Mode: ModeOff, Read: []string{"/x"}}).EffectiveMode(); m != ModeOff {
		t.Errorf("explicit off: %s", m)
	}
}

// TestMissingCommandFailsAtStart: a command that does not exist fails in
// Start, as exec would, not in a launcher started for nothing.
func TestMissingCommandFailsAtStart(t *testing.T) {
	if abi, _ := Support(); abi == 0 {
		t.Skip("no Landlock: Start never re-executes here")
	}
	cmd := exec.Command("/nonexistent/mcp-server")
	if _, err := Start(cmd, Config{Mode: ModeAuto}, nil); err == nil || !strings.Contains(err.Error(), "fork/exec /nonexistent/mcp-server: no such file or directory") {
		t.Errorf("Start = %v, want exec's error", err)
	}
	if _, err := Start(exec.Command(t.TempDir()), Config{Mode: ModeAuto}, nil); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Start of a directory = %v, want exec's error", err)
	}
}

// TestOldLandlockSaysWhatItCannotEnforce: on a kernel whose Landlock
// cannot restrict TCP ports (ABI < 4), strict refuses a server with port
// rules, and auto starts it saying the ports are not enforced rather
// than "connect none".
func TestOldLandlockSaysWhatItCannotEnforce(t *testing.T) {
	old := Support
	Support = func() (int, string) { return 3, "" }
	t.Cleanup(func() { Support = old })
	_, err := Start(exec.Command("true"), Config{Mode: ModeStrict}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot restrict TCP ports") {
		t.Errorf("strict on ABI 3: Start = %v, want a refusal", err)
	}
	l, err := Start(exec.Command("true"), Config{Mode: ModeAuto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Cleanup()
	if strings.Contains(l.Report, "connect none") || !strings.Contains(l.Report, "connect not enforced") {
		t.Errorf("report %q claims what ABI 3 cannot enforce", l.Report)
	}
	if len(l.NotEnforced) < 2 || !strings.Contains(strings.Join(l.NotEnforced, "\n"), "TCP ports") {
		t.Errorf("not enforced: %q", l.NotEnforced)
	}
	if _, err := Start(exec.Command("true"), Config{Mode: ModeStrict, Connect: Ports{Any: true}, Bind: Ports{Any: true}}, nil); err != nil {
		t.Errorf("strict with any ports on ABI 3: %v (nothing it asks for goes unenforced)", err)
	}
}
