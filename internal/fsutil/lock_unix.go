//go:build unix

package fsutil

import (
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive advisory lock (flock) on the file at path,
// creating it if needed, and waits until it is granted. The lock excludes
// other processes and other Lock calls in this process alike; unlock
// releases it. Keep the lock file beside, not on, the data it guards: data
// files are replaced by rename, which would leave the lock on a dead inode.
func Lock(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f.Close, nil // closing the descriptor releases the lock
}
