//go:build !linux

package sandbox

import (
	"errors"
	"runtime"
	"syscall"
)

// maxABI has no meaning here: nothing is enforced.
const maxABI = 0

func pdeathSig(*syscall.SysProcAttr) syscall.Signal { return 0 }

func support() (int, string) {
	return 0, "sandboxing is not supported on " + runtime.GOOS + " (Landlock is Linux's)"
}

func enforceAndExec(*spec) error {
	return errors.New("sandboxing is not supported on " + runtime.GOOS)
}
