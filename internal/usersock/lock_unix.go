//go:build unix

package usersock

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

// TryLock takes an exclusive lock on path (created if need be), unless
// another open of it holds one: then held is false. unlock removes the
// file, then releases the lock, so that a host that stops leaves nothing
// in $DSH_HOME/run; the kernel releases the lock of a process that dies
// (and the next host reuses its file).
//
// A file removed by its holder as this one opened it is locked in vain:
// the lock is kept only when path still names the file locked, else
// taken again on the file now there.
func TryLock(path string) (unlock func(), held bool, err error) {
	for range 10 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, false, fmt.Errorf("lock the socket: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("lock the socket: %w", err)
		}
		if !samePath(f, path) {
			f.Close()
			continue
		}
		return func() {
			if samePath(f, path) {
				os.Remove(path)
			}
			f.Close() // releases the lock
		}, true, nil
	}
	return nil, false, fmt.Errorf("lock the socket: %s keeps being replaced", path)
}

// samePath reports whether path names the file f has open.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
