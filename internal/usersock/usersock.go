// Package usersock is the mechanics of a Unix socket that belongs to one
// user and one composition: its path under $DSH_HOME/run, keyed by the
// composition's absolute path; its private directory; the lock file that
// says which process holds it; and the check of a connection's peer. The
// control socket (internal/control) and the approval broker's socket
// (internal/askbroker) are both made of them.
package usersock

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/dsh-host/dsh-host/internal/dshhome"
)

// maxPath is the longest socket path every platform takes: sun_path holds
// 104 bytes on macOS and the BSDs (108 on Linux), with the final NUL.
const maxPath = 103

// ErrTooLong is returned by Path when the socket's path is longer than a
// Unix socket path may be: nobody can listen there, so there is nobody to
// reach there either.
var ErrTooLong = errors.New("more than a Unix socket path may have")

// Resolve returns file's absolute path with symlinks resolved (the
// absolute path as given when it does not exist), so that every way of
// naming one file keys one socket.
func Resolve(file string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", file, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// Path returns the socket of the composition in file, named with suffix:
// $DSH_HOME/run/<hash><suffix>, hash being of Resolve(file).
func Path(file, suffix string) (string, error) {
	abs, err := Resolve(file)
	if err != nil {
		return "", err
	}
	return PathOf(abs, suffix)
}

// PathOf is Path of the absolute path abs, taken as it is.
func PathOf(abs, suffix string) (string, error) {
	if runtime.GOOS == "windows" {
		abs = strings.ToLower(abs) // one file, whatever the case it is named in
	}
	sum := sha256.Sum256([]byte(abs))
	dir, err := dshhome.Path("run")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, hex.EncodeToString(sum[:8])+suffix)
	if len(p) > maxPath {
		return "", fmt.Errorf("the socket %s is %d bytes long, %w (%d): set %s to a shorter directory", p, len(p), ErrTooLong, maxPath, dshhome.EnvVar)
	}
	return p, nil
}

// OwnedByMe returns an error unless fi belongs to the current user (on
// Windows, always nil).
func OwnedByMe(fi os.FileInfo) error { return ownedByMe(fi) }

// PrivateDir makes dir, or checks that it exists as a directory (not a
// symlink) owned by the current user, and restricts it to that user.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create the socket's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the socket's directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the socket's directory %s is not a directory", dir)
	}
	if err := ownedByMe(fi); err != nil {
		return fmt.Errorf("the socket's directory %s: %w", dir, err)
	}
	if fi.Mode().Perm() != 0o700 && runtime.GOOS != "windows" {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restrict %s to its owner: %w", dir, err)
		}
	}
	return nil
}
