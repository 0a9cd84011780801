//go:build !linux

package sandbox

import "runtime"

func seccompSupport() (bool, string) {
	return false, "seccomp is Linux's, not " + runtime.GOOS + "'s"
}
