package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// applyLimits sets l on this process (the launcher, about to exec the
// server), the soft and the hard limit alike: Go and Node raise their
// soft limits to the hard ones at start. syscall.Setrlimit, not unix's,
// so that Go's exec does not restore the file limit it raised itself.
// Root could raise a hard limit again (CAP_SYS_RESOURCE), so it loses
// that capability for the server.
func applyLimits(l Limits) error {
	set := func(key, name string, res int, v uint64) error {
		if v == 0 {
			return nil
		}
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("sandbox.limits.%s: set %s to %d: %w", key, name, v, err)
		}
		return nil
	}
	if err := set("memory", "RLIMIT_DATA", unix.RLIMIT_DATA, uint64(l.Memory)); err != nil {
		return err
	}
	if err := set("processes", "RLIMIT_NPROC", unix.RLIMIT_NPROC, uint64(l.Processes)); err != nil {
		return err
	}
	if err := set("files", "RLIMIT_NOFILE", unix.RLIMIT_NOFILE, uint64(l.Files)); err != nil {
		return err
	}
	if !l.Set() {
		return nil
	}
	return dropSysResource()
}

// dropSysResource takes CAP_SYS_RESOURCE from what the server can hold
// after exec: the bounding set and the inheritable set (which takes it out
// of the ambient set too). A process that neither holds it nor runs as
// root cannot gain it over an exec under no_new_privs, so there is nothing
// to drop.
func dropSysResource() error {
	const capBit = 1 << (unix.CAP_SYS_RESOURCE % 32)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read the capabilities: %w", err)
	}
	held := (data[0].Permitted|data[0].Inheritable)&capBit != 0
	ambient, _ := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, unix.CAP_SYS_RESOURCE, 0, 0)
	if !held && ambient != 1 && os.Geteuid() != 0 {
		return nil
	}
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_RESOURCE, 0, 0, 0); err != nil {
		return fmt.Errorf("drop CAP_SYS_RESOURCE, with which the server could raise its limits: %w", err)
	}
	if data[0].Inheritable&capBit != 0 {
		data[0].Inheritable &^= capBit
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("drop CAP_SYS_RESOURCE from the inheritable set: %w", err)
		}
	}
	return nil
}

// limitNotes are what the report says of l beyond the numbers: a
// process limit that root ignores, or one that the user's own processes
// already exceed (RLIMIT_NPROC counts all of them, not the server's).
func limitNotes(l Limits, uid int) []string {
	if l.Processes == 0 {
		return nil
	}
	if uid == 0 {
		return []string{"sandbox.limits.processes is not enforced: the server runs as root, whom RLIMIT_NPROC does not limit"}
	}
	if n := userTasks(uid); uint64(n) >= uint64(l.Processes) {
		return []string{fmt.Sprintf("sandbox.limits.processes is %d, but user %d already runs %d processes and threads, and RLIMIT_NPROC counts them all: the server cannot start a process or thread; raise it above what the user runs", l.Processes, uid, n)}
	}
	return nil
}

// serverUID is the user the server will run as.
func serverUID(cmd *exec.Cmd) int {
	if a := cmd.SysProcAttr; a != nil && a.Credential != nil {
		return int(a.Credential.Uid)
	}
	return os.Getuid()
}

// userTasks counts the threads of the processes whose real uid is uid,
// as RLIMIT_NPROC does.
func userTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := strconv.Itoa(uid)
	total := 0
	for _, e := range entries {
		if strings.Trim(e.Name(), "0123456789") != "" {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone since
		}
		mine, threads := false, 0
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 && f[0] == want {
					mine = true
				}
			} else if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		f.Close()
		if mine {
			total += threads
		}
	}
	return total
}
