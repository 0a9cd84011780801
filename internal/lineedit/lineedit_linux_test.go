package lineedit

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/ptytest"
)

func TestMain(m *testing.M) { leaks.VerifyTestMain(m) }

// rawOn is what the editor shows as it puts the terminal in raw mode
// for an entry.
const rawOn = "\x1b[?2004h"

type read struct {
	line string
	err  error
}

// session is an editor on a pty and its entries, read as the test types.
type session struct {
	t       *testing.T
	p       *ptytest.PTY
	ed      *Editor
	entries int
}

func newSession(t *testing.T, history string, complete func(string) (string, []string)) *session {
	t.Helper()
	p := ptytest.Open(t)
	ed, err := New(Config{In: p.Pts, Out: p.Pts, History: history, Complete: complete})
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, p: p, ed: ed}
}

// entry types keys once the editor waits for an entry, and returns it.
func (s *session) entry(keys ...string) read {
	s.t.Helper()
	got := make(chan read, 1)
	go func() {
		line, err := s.ed.ReadLine()
		got <- read{line, err}
	}()
	s.entries++
	s.p.WaitShown(s.t, rawOn, s.entries)
	s.p.Type(s.t, keys...)
	select {
	case r := <-got:
		return r
	case <-time.After(10 * time.Second):
		s.t.Fatalf("no entry read after %q", keys)
		return read{}
	}
}

func (s *session) close() {
	if err := s.ed.Close(); err != nil {
		s.t.Error(err)
	}
}

const (
	left   = "\x1b[D"
	up     = "\x1b[A"
	enter  = "\r"
	ctrlA  = "\x01"
	ctrlE  = "\x05"
	ctrlK  = "\x0b"
	ctrlW  = "\x17"
	ctrlR  = "\x12"
	ctrlC  = "\x03"
	ctrlD  = "\x04"
	tab    = "\t"
	altRet = "\x1b\r"
)

// Arrows and Emacs keys edit the line.
func TestEditKeys(t *testing.T) {
	s := newSession(t, "", nil)
	defer s.close()
	for _, tt := range []struct {
		keys []string
		want string
	}{
		{[]string{"helo", left, "l", enter}, "hello"},
		{[]string{"world", ctrlA, "hello ", ctrlE, "!", enter}, "hello world!"},
		{[]string{"keep drop", ctrlW, ctrlA, ctrlK, "new", enter}, "new"},
	} {
		if r := s.entry(tt.keys...); r.err != nil || r.line != tt.want {
			t.Errorf("%q: %q, %v; want %q", tt.keys, r.line, r.err, tt.want)
		}
	}
	if r := s.entry(ctrlC); !errors.Is(r.err, ErrInterrupt) {
		t.Errorf("Ctrl-C at an empty prompt: %q, %v", r.line, r.err)
	}
	if r := s.entry("typed", ctrlC, "again", enter); r.err != nil || r.line != "again" {
		t.Errorf("Ctrl-C over text drops it: %q, %v", r.line, r.err)
	}
	if r := s.entry(ctrlD); r.err != io.EOF {
		t.Errorf("Ctrl-D at an empty prompt: %q, %v", r.line, r.err)
	}
	if shown := s.p.Shown(); !strings.Contains(shown, Prompt) {
		t.Errorf("no prompt marker shown:\n%q", shown)
	}
}

// An entry of another session comes back with Up and with Ctrl-R; the
// file is the user's alone.
func TestHistoryAcrossSessions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "dsh", "chat_history")
	s := newSession(t, file, nil)
	s.entry("first entry", enter)
	s.entry("second entry", enter)
	s.entry("two\\", enter, "lines", enter)
	s.close()
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("history file: %v, %v", st, err)
	}

	s = newSession(t, file, nil)
	defer s.close()
	if r := s.entry(up, up, enter); r.line != "second entry" {
		t.Errorf("Up twice: %q, %v", r.line, r.err)
	}
	// Sent again, it is the latest; before it, the entry of two lines,
	// whole.
	if r := s.entry(up, up, enter); r.line != "two\nlines" {
		t.Errorf("Up twice after recalling it: %q, %v", r.line, r.err)
	}
	if r := s.entry(ctrlR, "first", enter, enter); r.line != "first entry" {
		t.Errorf("Ctrl-R: %q, %v", r.line, r.err)
	}
}

// A bracketed paste of several lines is one entry, its tabs kept; so are
// Alt-Enter and a trailing backslash.
func TestMultiLineEntry(t *testing.T) {
	s := newSession(t, "", func(string) (string, []string) { return "", []string{"COMPLETED"} })
	defer s.close()
	for _, tt := range []struct {
		keys []string
		want string
	}{
		{[]string{"look: ", "\x1b[200~func f() {\r\n\treturn\r\n}\x1b[201~", enter}, "look: func f() {\n\treturn\n}"},
		{[]string{"\x1b[200~one\ntwo\x03\x1b[201~", " three", enter}, "one\ntwo three"},
		{[]string{"first", altRet, "second", enter}, "first\nsecond"},
		{[]string{"first \\", enter, "second", enter}, "first \nsecond"},
	} {
		if r := s.entry(tt.keys...); r.err != nil || r.line != tt.want {
			t.Errorf("%q: %q, %v; want %q", tt.keys, r.line, r.err, tt.want)
		}
	}
}

// Tab completes the word before the cursor from Complete's candidates.
func TestTabCompletes(t *testing.T) {
	var asked []string
	s := newSession(t, "", func(before string) (string, []string) {
		asked = append(asked, before)
		word := before[strings.LastIndex(before, " ")+1:]
		return word, []string{"/cost", "/compact", "/context"}
	})
	defer s.close()
	if r := s.entry("/cos", tab, enter); r.line != "/cost" {
		t.Errorf("/cos Tab: %q, %v", r.line, r.err)
	}
	if r := s.entry("/con", tab, " now", enter); r.line != "/context now" {
		t.Errorf("/con Tab: %q, %v", r.line, r.err)
	}
	if len(asked) == 0 || asked[0] != "/cos" {
		t.Errorf("Complete was given %q", asked)
	}
}
