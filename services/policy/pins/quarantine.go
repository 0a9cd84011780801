package pins

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// A server added by `dsh-host add` is held until reviewed: its pin file
// is written before it first connects, with no trusted tools and the
// reason it is held, so that trust on first use does not apply and every
// tool it lists is held until `dsh-host trust` approves it. Trusting the
// server's tools clears the reason.

// fileName is the rule of a serverName, which names the pin file, at
// most maxFileName long: a counted repetition in the pattern would compile
// to 60 KB in the package initialisation every command pays (issue 44).
var fileName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxFileName = 64

func validFileName(server string) bool {
	return len(server) <= maxFileName && fileName.MatchString(server)
}

// HoldUntilReviewed writes server's pins in dir as held until reviewed,
// for why (such as "added by dsh-host add from io.github.x/y@1.0.0"): any
// definition trusted before under that name is dropped, since the server
// now called so is another.
func HoldUntilReviewed(dir, server, why string) error {
	if !validFileName(server) {
		return fmt.Errorf("%q is not a serverName", server)
	}
	s := newPinStore(dir)
	return s.replace(server, func(f *pinFile) { f.Held = why })
}

// Forget deletes server's pins in dir: its next list is trusted on first
// use. It is no error when there are none.
func Forget(dir, server string) error {
	if !validFileName(server) {
		return fmt.Errorf("%q is not a serverName", server)
	}
	s := newPinStore(dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.path(server)
	unlock, err := fsutil.Lock(path + ".lock")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no directory: no pins
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer func() { _ = unlock() }()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// HeldUntilReviewed returns why server is held until reviewed, "" when
// it is not (never added so, or trusted since).
func HeldUntilReviewed(dir, server string) (string, error) {
	if !validFileName(server) {
		return "", fmt.Errorf("%q is not a serverName", server)
	}
	f, err := readPinFile(newPinStore(dir).path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return f.Held, nil
}

// Snapshot keeps server's pin file in dir as it is now (or that there is
// none) and returns what puts it back: for a change of the pins made
// ahead of a write that may still fail, such as add's hold, whose failure
// must leave an earlier server's pins as they were.
func Snapshot(dir, server string) (restore func() error, err error) {
	if !validFileName(server) {
		return nil, fmt.Errorf("%q is not a serverName", server)
	}
	path := newPinStore(dir).path(server)
	b, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return func() error {
		if !existed {
			return Forget(dir, server)
		}
		unlock, err := fsutil.Lock(path + ".lock")
		if err != nil {
			return fmt.Errorf("lock %s: %w", path, err)
		}
		defer func() { _ = unlock() }()
		return fsutil.WriteFile(path, b, 0o600)
	}, nil
}
