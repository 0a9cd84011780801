package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/internal/usersock"
)

// SocketPath returns the control socket of the composition in file:
// $DSH_HOME/run/<hash>.sock, where hash is of file's absolute path with
// symlinks resolved (the path as given when it does not exist), so that
// every way of naming one file finds one socket.
func SocketPath(file string) (string, error) {
	return usersock.Path(file, ".sock")
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
	p, err := usersock.PathOf(abs, ".sock")
	return p, err == nil, err
}

// ErrInUse is returned by Listen when a live host of the same composition
// holds the socket already.
var ErrInUse = errors.New("another host of this composition holds the control socket")

// Listen opens the control socket of the composition in file. A socket
// file nobody answers on (its host died without removing it) is replaced;
// one a live host holds is left alone, and Listen returns ErrInUse. The
// listener accepts only connections of the current user (usersock.CheckPeer);
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
	l, unlock, err := usersock.Listen(path)
	if errors.Is(err, usersock.ErrInUse) {
		return nil, fmt.Errorf("%s: %w", path, ErrInUse)
	}
	if err != nil {
		return nil, err
	}
	return &sameUser{Listener: l, uid: os.Getuid(), log: logger, unlock: unlock, refuse: newRefuser()}, nil
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
		if err := usersock.CheckPeer(c, l.uid); err != nil {
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
