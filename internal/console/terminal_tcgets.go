//go:build linux || aix || solaris || zos

package console

import "golang.org/x/sys/unix"

// ioctlGetTermios is the request that reads a terminal's termios here.
const ioctlGetTermios = unix.TCGETS
