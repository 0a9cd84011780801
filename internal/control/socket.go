package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/internal/dshhome"
)

// maxSocketPath is the longest socket path every platform takes: sun_path
// holds 104 bytes on macOS and the BSDs (108 on Linux), with the final NUL.
const maxSocketPath = 103

// SocketPath returns the control socket of the composition in file:
// $DSH_HOME/run/<hash>.sock, where hash is of file's absolute path with
// symlinks resolved (the path as given when it does not exist), so that
// every way of naming one file finds one socket.
func SocketPath(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", file, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return socketFor(abs)
}

// namePath returns the socket of file under its own name: its absolute
// path with no symlink resolved, and whether that differs from
// SocketPath's. A host started on a symlink answers there too, so that
// the name keeps reaching it once the link is re-pointed (the host's
// reload follows the new target; SocketPath would then name another
// socket).
func namePath(file string) (string, bool, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", false, fmt.Errorf("resolve %s: %w", file, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || real == abs {
		return "", false, nil
	}
	p, err := socketFor(abs)
	return p, err == nil, err
}

// socketFor is the socket of the absolute path abs.
func socketFor(abs string) (string, error) {
	if runtime.GOOS == "windows" {
		abs = strings.ToLower(abs) // one file, whatever the case it is named in
	}
	sum := sha256.Sum256([]byte(abs))
	dir, err := dshhome.Path("run")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, hex.EncodeToString(sum[:8])+".sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("the control socket %s is %d bytes long, %w (%d): set %s to a shorter directory", p, len(p), errTooLong, maxSocketPath, dshhome.EnvVar)
	}
	return p, nil
}

// errTooLong: a host cannot listen on such a path, so there is none to
// reach there either (Dial).
var errTooLong = errors.New("more than a Unix socket path may have")

// ErrInUse is returned by Listen when a live host of the same composition
// holds the socket already.
var ErrInUse = errors.New("another host of this composition holds the control socket")

// Listen opens the control socket of the composition in file. A socket
// file nobody answers on (its host died without removing it) is replaced;
// one a live host holds is left alone, and Listen returns ErrInUse. The
// listener accepts only connections of the current user (see CheckPeer);
// refusals are logged to logger. When file is named through a symlink,
// the listener answers on the socket of that name too (namePath), unless
// another host holds it.
func Listen(file string, logger *slog.Logger) (net.Listener, error) {
	path, err := SocketPath(file)
	if err != nil {
		return nil, err
	}
	l, err := listenAt(path, logger)
	if err != nil {
		return nil, err
	}
	l.unpublish = publish(file, path, logger)
	if alias, ok, err := namePath(file); ok {
		if al, err := listenAt(alias, logger); err == nil {
			l.alias = al
		} else if logger != nil {
			logger.Debug("the control socket of the composition's link name is not served", "file", file, "err", err)
		}
	} else if err != nil && logger != nil {
		logger.Debug("the control socket of the composition's link name is not served", "file", file, "err", err)
	}
	return l, nil
}

// listenAt opens the socket at path (see Listen).
func listenAt(path string, logger *slog.Logger) (*sameUser, error) {
	if err := privateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	// The host that listens holds the socket's lock file for as long as
	// it does: another host finds the lock taken and leaves the socket
	// alone, and two hosts starting at once cannot both take it (the
	// second removing the first's). A host that dies releases the lock
	// (the kernel does), and the next one replaces the file it left.
	unlock, held, err := tryLock(strings.TrimSuffix(path, ".sock") + ".lock")
	if err != nil {
		return nil, err
	}
	if !held {
		return nil, fmt.Errorf("%s: %w", path, ErrInUse)
	}
	listening := false
	defer func() {
		if !listening {
			unlock()
		}
	}()
	l, err := net.Listen("unix", path)
	if err != nil {
		if _, statErr := os.Lstat(path); statErr != nil {
			return nil, fmt.Errorf("listen on %s: %w", path, err)
		}
		// Where there is no lock (Windows), a live host answers.
		if live(path) {
			return nil, fmt.Errorf("%s: %w", path, ErrInUse)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove the stale control socket %s: %w", path, err)
		}
		if l, err = net.Listen("unix", path); err != nil {
			return nil, fmt.Errorf("listen on %s: %w", path, err)
		}
	}
	// The directory is private already; the mode says it again for a
	// directory someone opened up.
	if err := os.Chmod(path, 0o600); err != nil && runtime.GOOS != "windows" {
		l.Close()
		return nil, fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	listening = true
	return &sameUser{Listener: l, uid: os.Getuid(), log: logger, unlock: sync.OnceFunc(unlock), refuse: newRefuser()}, nil
}

// live reports whether a host answers on the socket at path.
func live(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// privateDir makes dir, or checks that it exists as a directory (not a
// symlink) owned by the current user, and restricts it to that user.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the control socket's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the control socket's directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the control socket's directory %s is not a directory", dir)
	}
	if err := ownedByMe(fi); err != nil {
		return fmt.Errorf("the control socket's directory %s: %w", dir, err)
	}
	if fi.Mode().Perm() != 0o700 && runtime.GOOS != "windows" {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restrict %s to its owner: %w", dir, err)
		}
	}
	return nil
}

// sameUser accepts the connections of one user and closes the others.
// Closed, it gives the socket's lock up.
type sameUser struct {
	net.Listener
	uid    int
	log    *slog.Logger
	unlock func()
	// alias, when set, is the socket of the composition's link name
	// (Listen), served beside this one and closed with it.
	alias *sameUser
	// unpublish removes the socket from the index of running hosts
	// (index.go); nil for an alias.
	unpublish func()

	// refused counts the refusals into one log line per interval, with
	// the last one's error: a local process connecting in a loop must not
	// flood the log. Made at the first; Accept alone uses them.
	refused *rateLog
	lastErr error
	// refuse tells a refused peer why (limits.go).
	refuse *refuser
}

func (l *sameUser) Close() error {
	if l.unpublish != nil {
		l.unpublish()
	}
	err := l.Listener.Close() // removes the socket file
	l.unlock()
	if l.alias != nil {
		l.alias.Close()
	}
	l.refuse.stop()
	return err
}

func (l *sameUser) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := CheckPeer(c, l.uid); err != nil {
			if l.log != nil {
				if l.refused == nil {
					l.refused = &rateLog{every: refuseEvery, emit: func(n int) {
						l.log.Warn("control socket: connections refused", "refused", n, "err", l.lastErr)
					}}
				}
				l.lastErr = err
				l.refused.Add()
			}
			l.refuse.refuse(c, fmt.Sprintf("the running host (pid %d) answers only the user who started it (uid %d) on its control socket", os.Getpid(), l.uid))
			continue
		}
		return c, nil
	}
}

// ErrNoHost is returned by Dial when no host of the composition runs.
var ErrNoHost = errors.New("no running host for this composition")

// dialer connects to the socket at path.
func dialer(path string) func(ctx context.Context, _, _ string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}
