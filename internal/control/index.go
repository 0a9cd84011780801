package control

// The index of running hosts by composition, whatever DSH_HOME each runs
// under. The control socket lives in $DSH_HOME/run, so a command run with
// another DSH_HOME than the host's would not find it, and `status -c F`
// would start a second copy of every server of F to report on them (issue
// 44). A host therefore also links its socket from a per-user directory
// that no DSH_HOME names: $XDG_RUNTIME_DIR/dsh-host, else
// $TMPDIR/dsh-host-<uid>. The link is named by the composition's absolute
// path as the socket is; Dial follows it when the own DSH_HOME has no
// host. The directory must be the user's own and private (PrivateDir):
// one another user made, or a symlink, is not used, and hosts are then
// found under their own DSH_HOME only.

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/dsh-host/dsh-host/internal/usersock"
)

// indexDir is the directory of the index, not created.
func indexDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "dsh-host")
	}
	return filepath.Join(os.TempDir(), "dsh-host-"+strconv.Itoa(os.Getuid()))
}

// indexLink is the index's entry for the composition in file: the path
// of a symlink to its host's socket (dialled at its target, so the link's
// own path needs no room in a socket address).
func indexLink(file string) (string, error) {
	abs, err := usersock.Resolve(file)
	if err != nil {
		return "", err
	}
	if runtime.GOOS == "windows" {
		abs = strings.ToLower(abs)
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(indexDir(), hex.EncodeToString(sum[:8])+".link"), nil
}

// publish links the index's entry for file to socket, replacing what was
// there (a host that died left it, or another host of the composition
// runs under another DSH_HOME: the latest one is found). It returns what
// removes the entry while it still leads to socket. Failing, it logs why
// and the host is found under its own DSH_HOME only.
func publish(file, socket string, logger *slog.Logger) (unpublish func()) {
	link, err := indexLink(file)
	if err == nil {
		err = usersock.PrivateDir(filepath.Dir(link))
	}
	if err == nil {
		// A new link renamed over the entry: a reader finds the old one
		// or the new one, never none.
		tmp := link + ".new" + strconv.Itoa(os.Getpid())
		os.Remove(tmp)
		if err = os.Symlink(socket, tmp); err == nil {
			if err = os.Rename(tmp, link); err != nil {
				os.Remove(tmp)
			}
		}
	}
	if err != nil {
		if logger != nil {
			logger.Debug("the control socket is not in the index of running hosts: commands under another DSH_HOME will not find this host", "file", file, "err", err)
		}
		return func() {}
	}
	return func() {
		if to, err := os.Readlink(link); err == nil && to == socket {
			os.Remove(link)
		}
	}
}

// indexed returns the socket the index's entry for file leads to, "" when
// there is none (or no index the user owns).
func indexed(file string) string {
	link, err := indexLink(file)
	if err != nil {
		return ""
	}
	fi, err := os.Lstat(filepath.Dir(link))
	if err != nil || !fi.IsDir() || usersock.OwnedByMe(fi) != nil || (fi.Mode().Perm()&0o077 != 0 && runtime.GOOS != "windows") {
		return ""
	}
	to, err := os.Readlink(link)
	if err != nil || !filepath.IsAbs(to) {
		return ""
	}
	return to
}
