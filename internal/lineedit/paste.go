package lineedit

import (
	"bytes"
	"io"
	"unicode/utf8"
)

// The terminal's marks around a bracketed paste, and Alt-Enter.
var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
	altEnter   = []byte("\x1b\r")
)

// pasteFilter is the editor's input: it turns the newlines and tabs of a
// bracketed paste, and Alt-Enter, into marks readline edits as
// characters, so that a paste of several lines is one entry and Tab in
// it does not complete. Other control characters of a paste are dropped:
// pasted text never runs an editing key.
type pasteFilter struct {
	r       io.ReadCloser
	pending []byte // read, not yet filtered: maybe the start of a mark
	out     []byte // filtered, not yet returned
	pasting bool
	buf     [4096]byte
}

func (f *pasteFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		n, err := f.r.Read(f.buf[:])
		f.pending = append(f.pending, f.buf[:n]...)
		f.filter(err != nil)
		if err != nil && len(f.out) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

func (f *pasteFilter) Close() error { return f.r.Close() }

// filter moves what pending holds to out, keeping back a tail that may
// be the start of a mark until more comes (or the input ends: flush).
func (f *pasteFilter) filter(flush bool) {
	b := f.pending
	for len(b) > 0 {
		if b[0] == 0x1b {
			switch {
			case bytes.HasPrefix(b, pasteStart):
				f.pasting, b = true, b[len(pasteStart):]
				continue
			case bytes.HasPrefix(b, pasteEnd):
				f.pasting, b = false, b[len(pasteEnd):]
				continue
			case !f.pasting && bytes.HasPrefix(b, altEnter):
				f.out, b = utf8.AppendRune(f.out, newlineMark), b[len(altEnter):]
				continue
			case !flush && (bytes.HasPrefix(pasteStart, b) || bytes.HasPrefix(pasteEnd, b) || bytes.HasPrefix(altEnter, b)):
				// Maybe a mark, cut by the read: wait for the rest.
				f.pending = append(f.pending[:0], b...)
				return
			}
		}
		c := b[0]
		b = b[1:]
		if !f.pasting {
			f.out = append(f.out, c)
			continue
		}
		switch {
		case c == '\n' || c == '\r':
			// A paste's CRLF is one line break.
			if c == '\r' && len(b) > 0 && b[0] == '\n' {
				b = b[1:]
			}
			f.out = utf8.AppendRune(f.out, newlineMark)
		case c == '\t':
			f.out = utf8.AppendRune(f.out, tabMark)
		case c < 0x20 || c == 0x7f:
		default:
			f.out = append(f.out, c)
		}
	}
	f.pending = f.pending[:0]
}
