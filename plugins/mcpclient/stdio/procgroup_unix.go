//go:build unix

package stdio

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the child in a process group of its own, so that
// teardown can reach its descendants and a terminal's Ctrl-C reaches the
// host (which shuts servers down in order) rather than every server at once.
// On Linux the child also dies with the host (parentDeathSignal).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	parentDeathSignal(cmd.SysProcAttr)
}

// killProcessGroup kills what is left of the child's process group after
// the child itself has been reaped.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
