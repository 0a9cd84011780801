//go:build linux || aix || solaris || zos || darwin || dragonfly || freebsd || netbsd || openbsd

package console

import "golang.org/x/sys/unix"

// isTerminalFd reports whether fd is a terminal: one whose termios can be
// read.
func isTerminalFd(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	return err == nil
}
