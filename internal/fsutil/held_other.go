//go:build !unix

package fsutil

// HeldLock is Lock's lock taken again and again; without flock, within
// this process only, as Lock.
type HeldLock struct {
	path   string
	unlock func() error
}

// OpenLock returns the lock of the file at path.
func OpenLock(path string) (*HeldLock, error) { return &HeldLock{path: path}, nil }

// Lock takes the lock, waiting until it is granted.
func (l *HeldLock) Lock() error {
	unlock, err := Lock(l.path)
	if err != nil {
		return err
	}
	l.unlock = unlock
	return nil
}

// Unlock releases the lock.
func (l *HeldLock) Unlock() error { return l.unlock() }

// Close does nothing: the lock is not held between Lock and Unlock.
func (l *HeldLock) Close() error { return nil }
