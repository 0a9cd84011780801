package stdio

import "syscall"

// parentDeathSignal has the kernel SIGKILL the child when the host dies,
// however it dies (SIGKILL, OOM killer, crash), so that no server is left
// running re-parented to init. SIGKILL rather than SIGTERM: with the host
// gone, nobody is left to escalate after a grace period, and a server that
// ignores SIGTERM would live on. A stdio server's descendants are not
// signalled; most exit at the EOF of the stdin they share with it, and
// those that do not (or that start a session of their own) remain.
//
// Linux sends the signal when the thread that started the child exits, not
// the process, and Go ends a thread when a goroutine locked to it returns
// without unlocking; so the child is started on a thread held for its
// lifetime (onOwnThread).
func parentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
