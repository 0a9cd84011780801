//go:build !unix

package fsutil

import (
	"fmt"
	"os"
	"sync"
)

var inProcess sync.Map // path → *sync.Mutex

// Lock takes an exclusive lock on path within this process only: this
// platform has no flock, so concurrent writers in other processes are not
// excluded.
func Lock(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	m, _ := inProcess.LoadOrStore(path, new(sync.Mutex))
	m.(*sync.Mutex).Lock()
	return func() error {
		m.(*sync.Mutex).Unlock()
		return f.Close()
	}, nil
}
