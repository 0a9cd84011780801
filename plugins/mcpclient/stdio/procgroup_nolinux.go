//go:build unix && !linux

package stdio

import "syscall"

// parentDeathSignal does nothing here: a parent-death signal is Linux's
// (procgroup_linux.go); elsewhere a killed host's servers live on until
// their stdin's EOF ends them.
func parentDeathSignal(*syscall.SysProcAttr) {}
