// Package termsafe makes text that someone else controls (an MCP server's
// tool descriptions, results, errors and stderr lines) safe to print on a
// terminal: control characters are shown escaped, visible, instead of being
// executed. A server could otherwise set the window title (ESC ] 0 ; … BEL),
// clear the screen (ESC [ 2 J), overwrite what was printed (carriage return,
// backspace) or reorder it (Unicode bidi overrides).
//
// Escape is the one rule; Writer and Handler apply it to a writer and to a
// log handler. Output that is not a terminal (files, pipes, --json) keeps its
// exact bytes: the caller decides, per output, whether to use them.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character a terminal would act on written as
// a visible escape:
//
//   - C0 controls (U+0000–U+001F) but tab and newline, DEL (U+007F) and C1
//     controls (U+0080–U+009F) as \u001b, \u0007, \u0085 and so on;
//   - the bidi embeddings, overrides and isolates (U+202A–U+202E,
//     U+2066–U+2069) as \u202e and so on;
//   - each byte of invalid UTF-8 as \x9b and so on.
//
// Tab and newline are layout and stay, and so does a carriage return right
// before a newline (a CRLF line end moves nothing). Everything else, UTF-8
// text of any script included, is unchanged. A backslash is not escaped, so
// a literal "\u001b" in s reads like an escaped ESC; the point is that
// nothing is executed, not that the text round-trips.
//
// Escape is idempotent, and returns s itself when nothing needs escaping.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && !(r == '\r' && i+1 < len(s) && s[i+1] == '\n'):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe returns the index of the first byte Escape changes, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' {
			i++
			continue
		}
		if c == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

// unsafeRune reports whether a terminal would act on r rather than show it.
// Tab and newline count as safe here; a lone carriage return does not.
func unsafeRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Writer escapes what is written to it (Escape) before passing it on to w.
// Each Write is escaped as a whole, so a character split across two writes
// shows as invalid bytes: write whole strings, as fmt and tabwriter do.
type Writer struct {
	w io.Writer
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes the result to the underlying writer. It
// reports len(p) when the whole result was written.
func (e *Writer) Write(p []byte) (int, error) {
	s := string(p)
	if _, err := io.WriteString(e.w, Escape(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}
