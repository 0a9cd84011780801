package console

import (
	"context"
	"io"
	"os"

	"github.com/dsh-host/dsh-host/internal/termsafe"
)

// Stdio is where a front end reads and writes, and how it tells a
// terminal: front ends never touch os.Stdin, os.Stdout or os.Stderr
// directly, so tests can run them in-process.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
	// Terminal reports whether v (In, Out or Err) is a terminal; nil means
	// the real test, IsTerminal. Tests set it to have a buffer taken for a
	// terminal.
	Terminal func(v any) bool
	// OpenURL opens a login's authorization URL; nil is the default
	// ($BROWSER, else the platform's opener). Tests set it.
	OpenURL func(ctx context.Context, url string) error
}

// IsTerminal reports whether v is a terminal, as s decides it.
func (s Stdio) IsTerminal(v any) bool {
	if s.Terminal != nil {
		return s.Terminal(v)
	}
	return IsTerminal(v)
}

// Display returns s with Out and Err made safe for a person to read: each
// one that is a terminal escapes control characters (termsafe), so that
// text a server controls (descriptions, results, replies, errors) is shown,
// not executed; a file or pipe gets the exact bytes.
func (s Stdio) Display() Stdio {
	if s.IsTerminal(s.Out) {
		s.Out = termsafe.NewWriter(s.Out)
	}
	if s.IsTerminal(s.Err) {
		s.Err = termsafe.NewWriter(s.Err)
	}
	return s
}

// LiveTerminal returns w when s takes it for a terminal, where a live
// progress line may go, else nil.
func (s Stdio) LiveTerminal(w io.Writer) io.Writer {
	if s.IsTerminal(w) {
		return w
	}
	return nil
}

// IsTerminal reports whether v is an *os.File open on a terminal. A
// character device is not enough: /dev/null is one too.
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && isTerminalFd(f.Fd())
}
