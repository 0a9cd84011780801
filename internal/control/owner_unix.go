//go:build unix

package control

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe returns an error unless fi belongs to the current user.
func ownedByMe(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("owned by uid %d, not by this user (%d)", st.Uid, os.Getuid())
	}
	return nil
}

// lockFile takes an exclusive lock on path (created if need be) and
// returns its release. The kernel releases it if the process dies.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the control socket: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the control socket: %w", err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}
