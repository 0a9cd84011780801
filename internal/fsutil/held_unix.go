//go:build unix

package fsutil

import (
	"fmt"
	"os"
	"syscall"
)

// HeldLock is a lock file kept open, for a writer that takes the lock for
// every small write: Lock opens the file each time, which costs as much
// again as the flock.
type HeldLock struct {
	f *os.File
}

// OpenLock opens (creating) the lock file at path; see Lock for where to
// keep it.
func OpenLock(path string) (*HeldLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	return &HeldLock{f: f}, nil
}

// Lock takes the lock exclusively, waiting until it is granted: other
// processes and other HeldLocks and Lock calls are excluded; two
// goroutines sharing one HeldLock are not (the flock is the file's).
func (l *HeldLock) Lock() error {
	return flock(l.f, syscall.LOCK_EX)
}

// Unlock releases the lock.
func (l *HeldLock) Unlock() error {
	return flock(l.f, syscall.LOCK_UN)
}

// Close closes the file, releasing the lock if held.
func (l *HeldLock) Close() error { return l.f.Close() }

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			if err != nil {
				return fmt.Errorf("lock %s: %w", f.Name(), err)
			}
			return nil
		}
	}
}
