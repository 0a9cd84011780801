package usersock

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// ErrInUse is returned by Listen when a live process holds the socket.
var ErrInUse = errors.New("another process holds the socket")

// Listen opens the Unix socket at path (a Path) in its private directory,
// restricted to its owner (0600). The process that listens holds the
// socket's lock file (path with ".sock" replaced by ".lock") for as long
// as it does: another finds the lock taken and leaves the socket alone
// (ErrInUse), and two starting at once cannot both take it (the second
// removing the first's). A process that dies releases the lock (the
// kernel does), and the next one replaces the socket file it left.
//
// unlock gives the lock up and removes its file; call it once the
// listener is closed (which removes the socket). It may be called more
// than once.
func Listen(path string) (l net.Listener, unlock func(), err error) {
	if err := PrivateDir(filepath.Dir(path)); err != nil {
		return nil, nil, err
	}
	unlockFile, held, err := TryLock(strings.TrimSuffix(path, ".sock") + ".lock")
	if err != nil {
		return nil, nil, err
	}
	if !held {
		return nil, nil, ErrInUse
	}
	listening := false
	defer func() {
		if !listening {
			unlockFile()
		}
	}()
	l, err = net.Listen("unix", path)
	if err != nil {
		if _, statErr := os.Lstat(path); statErr != nil {
			return nil, nil, fmt.Errorf("listen on %s: %w", path, err)
		}
		// Where there is no lock (Windows), a live process answers.
		if live(path) {
			return nil, nil, ErrInUse
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
		}
		if l, err = net.Listen("unix", path); err != nil {
			return nil, nil, fmt.Errorf("listen on %s: %w", path, err)
		}
	}
	// The directory is private already; the mode says it again for a
	// directory someone opened up.
	if err := os.Chmod(path, 0o600); err != nil && runtime.GOOS != "windows" {
		l.Close()
		return nil, nil, fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	listening = true
	return l, sync.OnceFunc(unlockFile), nil
}

// live reports whether a process answers on the socket at path.
func live(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
