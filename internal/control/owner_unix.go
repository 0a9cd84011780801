//go:build unix

package control

import (
	"errors"
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

// tryLock takes an exclusive lock on path (created if need be), unless
// another open of it holds one: then held is false. unlock releases it;
// so does the kernel if the process dies.
func tryLock(path string) (unlock func(), held bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("lock the control socket: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("lock the control socket: %w", err)
	}
	return func() { f.Close() }, true, nil // closing releases the lock
}
