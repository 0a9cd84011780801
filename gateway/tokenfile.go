package gateway

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxTokenFile bounds what readTokenFile reads: a token is a line, and a
// path named by mistake (a log, a device) must not be read whole.
const maxTokenFile = 4 << 10

// readTokenFile returns the static token in file: its content without the
// trailing line break editors and `echo` add. The file is read when the
// gateway starts (serve's start, or a reload that restarts the entry); an
// edit of it alone takes effect at the next start. A file that cannot be
// read, is empty, too long or holds more than one line is an error; no
// error quotes the content.
func readTokenFile(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", errors.Unwrap(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return "", errors.New("is a directory; name the file holding the token")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("cannot read it: %w", err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("is longer than %d bytes: a token is one line, such as `openssl rand -hex 32` prints", maxTokenFile)
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
