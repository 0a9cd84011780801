package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// marker is the argument that makes Main the launcher: the binary was
// executed again by Start to sandbox a server.
const marker = "__dsh-host-sandbox-exec__"

// specEnv carries the launcher's spec from Start to Main; Main removes it
// before the exec, so the server never sees it.
const specEnv = "DSH_SANDBOX_SPEC"

// hooked is set by Main in a process that is not a launcher: the binary
// honours the hook, so re-executing it launches a server rather than,
// say, running a test binary's tests again.
var hooked atomic.Bool

// spec is what the launcher applies and then execs.
type spec struct {
	Path string
	Argv []string
	Rules
	// Seccomp applies the filter of seccomp_linux.go, which refuses UDP
	// unless UDP and unix sockets unless Unix.
	Seccomp bool
	// PdeathSig is the parent-death signal the host asked for: the
	// kernel keeps it per thread, and the launcher's Go runtime may exec
	// from a thread other than the one forked, which has none.
	PdeathSig int `json:",omitempty"`
	// Host is the host's pid, the launcher's parent while it lives.
	Host int `json:",omitempty"`
}

// Rules are what a sandboxed server may do: the effective grants, the
// defaults and the entry's keys together.
type Rules struct {
	Read    []string
	Write   []string
	Connect Ports
	Bind    Ports
	// UDP and Unix let the server use UDP and unix sockets (seccomp);
	// Limits are its resource limits.
	UDP, Unix bool
	Limits    Limits
}

// Readable reports whether the rules let p be read.
func (r Rules) Readable(p string) bool { return under(p, r.Read) || under(p, r.Write) }

// Writable reports whether the rules let p be written.
func (r Rules) Writable(p string) bool { return under(p, r.Write) }

// under reports whether p is one of dirs or below one.
func under(p string, dirs []string) bool {
	p = filepath.Clean(p)
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// Launch is a server's start as Start arranged it.
type Launch struct {
	// Sandboxed reports whether the server runs in the sandbox.
	Sandboxed bool
	// Report says what is enforced, or why nothing is: "sandboxed
	// (landlock v7): read 14 paths, write 5, connect none, bind none".
	Report string
	// Warning, when set, is to be logged once: mode auto could not
	// sandbox the server, and says why.
	Warning string
	// Notes are what the defaults left out, for the log.
	Notes []string
	// NotEnforced are the rules this system cannot enforce for the
	// server, each naming its key: "udp (no seccomp here)", a process
	// limit under root. Report says them too.
	NotEnforced []string
	// Rules are what the sandbox grants, and ABI the Landlock ABI it
	// enforces, when Sandboxed; Seccomp whether the filter applies.
	Rules   Rules
	ABI     int
	Seccomp bool
	tmp     string
	after   []func()
}

// After adds f to what Cleanup does.
func (l *Launch) After(f func()) { l.after = append(l.after, f) }

// Cleanup removes what Start made for the server (its temporary
// directory); call it once the server has exited.
func (l *Launch) Cleanup() {
	if l == nil {
		return
	}
	if l.tmp != "" {
		os.RemoveAll(l.tmp)
	}
	for _, f := range l.after {
		f()
	}
}

// Support reports the Landlock ABI version the kernel offers (0 where
// there is none) and, when 0, why. Tests replace it to simulate a
// kernel without Landlock.
var Support = support

// Start rewrites cmd, made by exec.Command with its Env and Dir set, to
// start under cfg: the current binary, executed again, applies the
// sandbox and execs the server (Main). roots are directories the server
// may read and write. On error cmd must not be started: the error says
// why (strict mode on a system without Landlock, a path to grant that
// does not exist, a binary without the hook).
func Start(cmd *exec.Cmd, cfg Config, roots []string) (*Launch, error) {
	return start(cmd, cfg, roots, nil)
}

// start is Start; with run set, the launcher execs run (a probe) instead
// of cmd, under the rules found for cmd.
func start(cmd *exec.Cmd, cfg Config, roots []string, run []string) (*Launch, error) {
	mode := cfg.EffectiveMode()
	if mode == ModeOff {
		return &Launch{Report: "not sandboxed (sandbox.mode: off)"}, nil
	}
	if cmd.Err != nil {
		return nil, cmd.Err // it would not start anyway
	}
	if err := executable(cmd.Path); err != nil {
		// Fail here as an unsandboxed start would, rather than in
		// the launcher, after a process start.
		return nil, err
	}
	abi, why := Support()
	filter, noFilter := seccompSupport()
	if abi > 0 && !filter && mode == ModeStrict {
		abi, why = 0, noFilter
	}
	if abi == 0 {
		if mode == ModeStrict {
			return nil, fmt.Errorf("sandbox.mode is strict, but the server cannot be sandboxed here: %s; the server was not started (set sandbox.mode: auto to start it unsandboxed)", why)
		}
		return &Launch{Report: "not sandboxed: " + why,
			Warning: "the server runs unsandboxed, with the user's rights: " + why + " (sandbox.mode: strict refuses instead, off silences this)"}, nil
	}
	gaps := abiGaps(abi, cfg)
	if mode == ModeStrict && abi < 4 && !(cfg.Connect.Any && cfg.Bind.Any) { // gaps[0] is TCP's
		return nil, fmt.Errorf("sandbox.mode is strict, but %s; the server was not started (set sandbox.mode: auto to start it with what this kernel enforces)", gaps[0])
	}
	if !hooked.Load() {
		return nil, errors.New("sandbox: this binary does not call sandbox.Main first in main (or TestMain), so it cannot launch a sandboxed server; set sandbox.mode: off")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find the host's binary to launch the server: %w", err)
	}
	home := childEnv(cmd.Env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	dir := cmd.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("sandbox: the working directory: %w", err)
		}
	}
	dir, _ = filepath.Abs(dir)

	g := defaultGrants(cmd, dir, home, roots)
	var errs []error
	user := func(key string, list []string, add func(...string)) {
		for i, p := range list {
			p = expand(p, home)
			if _, err := os.Stat(p); err != nil {
				errs = append(errs, &KeyError{fmt.Sprintf("%s[%d]", key, i), fmt.Errorf("%s cannot be granted: %w", p, errors.Unwrap(err))})
				continue
			}
			add(p)
		}
	}
	user("read", cfg.Read, g.addRead)
	user("write", cfg.Write, g.addWrite)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	tmp, err := os.MkdirTemp("", "dsh-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: the server's temporary directory: %w", err)
	}
	g.addWrite(tmp)
	s := spec{Path: cmd.Path, Argv: cmd.Args, Seccomp: filter, Rules: Rules{Read: existing(g.read), Write: existing(g.write),
		Connect: cfg.Connect, Bind: cfg.Bind, UDP: cfg.AllowsUDP(), Unix: cfg.Unix, Limits: cfg.Limits}}
	if cmd.SysProcAttr != nil {
		s.PdeathSig, s.Host = int(pdeathSig(cmd.SysProcAttr)), os.Getpid()
	}
	if run != nil {
		// The probe is the host's binary: it alone is added, as a
		// file to read and execute.
		s.Path, s.Argv = run[0], run
		s.Read = append(s.Read, run[0])
	}
	b, err := json.Marshal(s)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	env := make([]string, 0, len(cmd.Env)+2)
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, specEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "TMPDIR="+tmp, specEnv+"="+string(b))
	cmd.Path = self
	cmd.Args = []string{self, marker}
	l := &Launch{Sandboxed: true, tmp: tmp, Notes: g.notes, Rules: s.Rules, ABI: min(abi, maxABI), Seccomp: filter, NotEnforced: gaps}
	connect, bind := cfg.Connect.String(), cfg.Bind.String()
	if abi < 4 {
		connect, bind = "not enforced", "not enforced"
	}
	l.Report = fmt.Sprintf("sandboxed (landlock v%d): read %d paths, write %d, connect %s, bind %s; %s",
		min(abi, maxABI), len(s.Read), len(s.Write), connect, bind, l.beyondLandlock(cfg, noFilter, serverUID(cmd)))
	return l, nil
}

// abiGaps names what Landlock of this ABI cannot enforce of cfg: TCP
// ports before ABI 4 (Linux 6.7), signal and abstract-socket scoping
// before ABI 6 (Linux 6.12).
func abiGaps(abi int, cfg Config) []string {
	var out []string
	if abi < 4 && !(cfg.Connect.Any && cfg.Bind.Any) {
		out = append(out, fmt.Sprintf("sandbox.connect and sandbox.bind: Landlock ABI %d cannot restrict TCP ports (they need 4, Linux 6.7)", abi))
	}
	if abi < 6 {
		out = append(out, fmt.Sprintf("signals and abstract unix sockets: Landlock ABI %d cannot scope them (they need 6, Linux 6.12)", abi))
	}
	return out
}

// beyondLandlock words what the seccomp filter and the limits enforce
// ("udp: blocked (seccomp), unix sockets: blocked (seccomp)"), noting in
// l what they cannot. noFilter is why there is no seccomp, or "".
func (l *Launch) beyondLandlock(cfg Config, noFilter string, uid int) string {
	word := func(key, name string, allowed bool) string {
		switch {
		case allowed && key == "udp" && cfg.UDP == nil:
			return name + ": allowed (as sandbox.connect allows TCP; sandbox.udp: false blocks it)"
		case allowed:
			return name + ": allowed (sandbox." + key + ")"
		case noFilter != "":
			l.NotEnforced = append(l.NotEnforced, "sandbox."+key+": "+noFilter)
			return name + ": not blocked (no seccomp)"
		}
		return name + ": blocked (seccomp)"
	}
	parts := []string{word("udp", "udp", cfg.AllowsUDP()), word("unix", "unix sockets", cfg.Unix)}
	if cfg.Limits.Set() {
		lim := cfg.Limits
		var ls []string
		if lim.Memory > 0 {
			ls = append(ls, "memory "+lim.Memory.String()+" (RLIMIT_DATA)")
		}
		if lim.Processes > 0 {
			p := fmt.Sprintf("processes %d (RLIMIT_NPROC)", lim.Processes)
			if uid == 0 {
				p = fmt.Sprintf("processes %d (RLIMIT_NPROC: not enforced, as root)", lim.Processes)
			}
			ls = append(ls, p)
		}
		if lim.Files > 0 {
			ls = append(ls, fmt.Sprintf("files %d (RLIMIT_NOFILE)", lim.Files))
		}
		parts = append(parts, "limits: "+strings.Join(ls, ", "))
		notes := limitNotes(lim, uid)
		l.Notes = append(l.Notes, notes...)
		if uid == 0 && lim.Processes > 0 {
			l.NotEnforced = append(l.NotEnforced, notes...)
		}
	}
	if noFilter != "" {
		l.Notes = append(l.Notes, "udp and unix sockets are not blocked: "+noFilter)
	}
	return strings.Join(parts, ", ")
}

// executable returns the error exec would give starting path, if any.
func executable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return &os.PathError{Op: "fork/exec", Path: path, Err: errors.Unwrap(err)}
	case st.IsDir() || st.Mode()&0o111 == 0:
		return &os.PathError{Op: "fork/exec", Path: path, Err: os.ErrPermission}
	}
	return nil
}

// Main is the hook every binary of the project calls first in main (and
// TestMain): in a process Start launched, it applies the sandbox and
// execs the server, never returning; anywhere else it returns at once.
func Main() {
	if len(os.Args) >= 2 && os.Args[1] == probeMarker {
		runProbe(os.Args[2:])
	}
	if len(os.Args) < 2 || os.Args[1] != marker {
		hooked.Store(true)
		return
	}
	raw := os.Getenv(specEnv)
	os.Unsetenv(specEnv)
	var s spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil || s.Path == "" {
		fail(fmt.Errorf("no launch spec in %s", specEnv))
	}
	fail(enforceAndExec(&s))
}

// fail reports err on stderr, where the host logs it as the server's, and
// exits with 126 (the shell's "cannot execute").
func fail(err error) {
	fmt.Fprintf(os.Stderr, "dsh-host sandbox: %v; the server was not started\n", err)
	os.Exit(126)
}
