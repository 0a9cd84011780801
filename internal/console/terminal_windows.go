package console

import "golang.org/x/sys/windows"

// isTerminalFd reports whether fd is a console: one with a console mode.
func isTerminalFd(fd uintptr) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(fd), &mode) == nil
}
