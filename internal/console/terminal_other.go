//go:build !(linux || aix || solaris || zos || darwin || dragonfly || freebsd || netbsd || openbsd || windows)

package console

// isTerminalFd reports false: there is no terminal to detect here, so the
// console stays off unless asked for and logs are plain text.
func isTerminalFd(fd uintptr) bool { return false }
