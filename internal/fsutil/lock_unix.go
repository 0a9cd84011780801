//go:build unix

package fsutil

// Lock takes an exclusive advisory lock (flock) on the file at path,
// creating it if needed, and waits until it is granted. The lock excludes
// other processes and other Lock calls in this process alike; unlock
// releases it. Keep the lock file beside, not on, the data it guards: data
// files are replaced by rename, which would leave the lock on a dead inode.
func Lock(path string) (unlock func() error, err error) {
	l, err := OpenLock(path)
	if err != nil {
		return nil, err
	}
	if err := l.Lock(); err != nil {
		l.Close()
		return nil, err
	}
	return l.Close, nil // closing the descriptor releases the lock
}
