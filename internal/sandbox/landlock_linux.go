package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// maxABI is the newest Landlock ABI whose rights the sandbox handles.
// ABI 9 (pathname unix sockets) and 10 (UDP) would refuse what the
// entries have no key to grant yet (a resolver's socket, DNS over UDP
// for connect: [443]), so they wait until they do; what they would
// enforce is not enforced. ABI 8 restricts what 7 does.
const maxABI = 8

// base is the Landlock configuration at maxABI, reduced to what the
// kernel offers at enforcement (best effort).
var base = landlock.V8

// pdeathSig is the parent-death signal attr asks for.
func pdeathSig(attr *syscall.SysProcAttr) syscall.Signal { return attr.Pdeathsig }

func support() (int, string) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v <= 0 {
		return 0, fmt.Sprintf("this Linux kernel does not offer Landlock (%v); it needs Linux 5.13 or later with lsm=landlock", err)
	}
	return v, ""
}

// enforceAndExec applies s to this thread (its limits, no_new_privs, the
// Landlock domain, then the seccomp filter) and execs the server from it:
// the domain of the thread that calls execve is the new program's, so the
// launcher needs no all-threads enforcement.
func enforceAndExec(s *spec) error {
	cfg := landlock.Config{HandledAccessFS: base.HandledAccessFS, Scoped: base.Scoped}
	var rules []landlock.Rule
	if !s.Connect.Any {
		cfg.HandledAccessNet |= ll.AccessNetConnectTCP
		for _, p := range s.Connect.List {
			rules = append(rules, landlock.ConnectTCP(p))
		}
	}
	if !s.Bind.Any {
		cfg.HandledAccessNet |= ll.AccessNetBindTCP
		for _, p := range s.Bind.List {
			rules = append(rules, landlock.BindTCP(p))
		}
	}
	for _, p := range s.Read {
		if p == "/proc" {
			rules = append(rules, procRules()...)
			continue
		}
		rules = append(rules, pathRule(p, false))
	}
	for _, p := range s.Write {
		rules = append(rules, pathRule(p, true))
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("build the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		// Best effort found nothing to enforce: no Landlock. Start
		// only launches when the kernel offers it and the host has
		// logged the server as sandboxed, so exec'ing it unsandboxed
		// would break that word (and a spec is the caller's to forge).
		return fmt.Errorf("Landlock is not available, so the sandbox cannot be applied")
	}
	var filter []*unix.SockFprog
	if s.Seccomp {
		// Built before the limits bind this process's memory.
		if filter, err = buildSeccomp(s); err != nil {
			return err
		}
	}
	if err := applyLimits(s.Limits); err != nil {
		return err
	}
	runtime.LockOSThread() // never unlocked: this thread execs
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("enforce the Landlock ruleset: %w", err)
	}
	unix.Close(fd)
	if s.PdeathSig != 0 {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(s.PdeathSig), 0, 0, 0); err != nil {
			return fmt.Errorf("set the parent-death signal: %w", err)
		}
		if os.Getppid() != s.Host {
			// It died before the signal was set: none will come.
			return fmt.Errorf("the host exited before the server started")
		}
	}
	if filter != nil {
		if err := installSeccomp(filter); err != nil {
			return err
		}
	}
	err = syscall.Exec(s.Path, s.Argv, os.Environ())
	return fmt.Errorf("exec %s: %w", s.Path, err)
}

// procRules grant /proc without the other processes' directories: a
// server may read its own (/proc/self, this process's once it execs) and
// the system's entries (cpuinfo, meminfo, sys, ...), but not the host's
// /proc/PID/environ, which Landlock's ptrace scoping leaves readable and
// which holds the secrets the environment scrub keeps from the server.
// A process the server starts cannot read its own /proc/PID either.
func procRules() []landlock.Rule {
	rules := []landlock.Rule{landlock.RODirs("/proc/self")}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return rules
	}
	for _, e := range entries {
		name := e.Name()
		if e.Type()&os.ModeSymlink != 0 || strings.Trim(name, "0123456789") == "" {
			continue // self, thread-self, net, mounts: into a PID's directory
		}
		rules = append(rules, pathRule("/proc/"+name, false))
	}
	return rules
}

// pathRule grants p: a directory's files and subdirectories, or a file
// alone (directory rights on a file are refused by the kernel).
func pathRule(p string, write bool) landlock.Rule {
	dir := true
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		dir = false
	}
	switch {
	case write && dir:
		return landlock.RWDirs(p).WithRefer().IgnoreIfMissing()
	case write:
		return landlock.RWFiles(p).IgnoreIfMissing()
	case dir:
		return landlock.RODirs(p).IgnoreIfMissing()
	default:
		return landlock.ROFiles(p).IgnoreIfMissing()
	}
}
