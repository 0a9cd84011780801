package replicas

import (
	"os/exec"
	"syscall"
)

// dieWithParent has cmd's process get SIGTERM when the process that
// started it dies, so that a killed run leaves no replica behind (a
// replica drains and stops its MCP server at SIGTERM).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
