// Package tokenfile reads a bearer token from a file, as container
// secrets and systemd credentials are mounted: the gateway's tokenFile and
// the metrics entry's.
package tokenfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// MaxBytes bounds what Read reads: a token is a line, and a
// path named by mistake (a log, a device) must not be read whole.
const MaxBytes = 4 << 10

// Read returns the token in file: its content without the trailing line
// break editors and `echo` add. Its caller reads it when its instance
// starts (serve's start, or a reload that restarts the entry); an edit of
// it alone takes effect at the next start. A file that cannot be
// read, is not a regular file, is empty, too long or holds more than one
// line is an error; no error quotes the content, and none names the file:
// its caller does, with the key that named it.
func Read(file string) (string, error) {
	// Opened without blocking, its mode checked on the opened file
	// (fsutil.ReadRegular): a FIFO named here, or swapped in after a
	// check, must not hold the entry's start waiting for a writer.
	b, err := fsutil.ReadRegular(file, MaxBytes)
	var notRegular *fsutil.NotRegularError
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &notRegular) && notRegular.Kind == "a directory":
		return "", errors.New("is a directory; name the file holding the token")
	case errors.As(err, &notRegular):
		return "", fmt.Errorf("is not a regular file (%s); name a file holding the token", notRegular.Kind)
	case errors.Is(err, fsutil.ErrTooLarge):
		return "", fmt.Errorf("is longer than %d bytes: a token is one line, such as `openssl rand -hex 32` prints", MaxBytes)
	case errors.As(err, &pathErr):
		// The caller names the file.
		return "", fmt.Errorf("cannot read it: %w", pathErr.Err)
	case err != nil:
		return "", fmt.Errorf("cannot read it: %w", err)
	}
	token := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	switch {
	case strings.TrimSpace(token) == "":
		return "", errors.New("is empty; write a long random token in it, such as `openssl rand -hex 32 > FILE`")
	case strings.ContainsAny(token, "\r\n"):
		return "", errors.New("holds more than one line; the token is the file's one line")
	case strings.TrimSpace(token) != token:
		// A header value cannot carry it: clients would send another
		// token than the one the gateway compares.
		return "", errors.New("the token starts or ends with spaces; write it without them")
	}
	return token, nil
}

// FromEnv returns the token in the environment variable name, as Read
// does a file's: an unset or empty variable is an error, and so is a
// token that starts or ends with spaces, which no client could send (a
// header's value is trimmed). No error quotes the content.
func FromEnv(name string) (string, error) {
	token := os.Getenv(name)
	switch {
	case token == "":
		return "", fmt.Errorf("%s: the variable is not set or empty; export a long random token in it", name)
	case strings.TrimSpace(token) != token:
		return "", fmt.Errorf("%s: the token starts or ends with spaces; set it without them", name)
	}
	return token, nil
}
