// Package lineedit is the chat console's line editor on a terminal: Emacs
// keys and arrows, history kept across sessions with reverse search
// (Ctrl-R), Tab completion, and input of several lines: a bracketed
// paste arrives as one entry, Alt-Enter or a trailing backslash starts
// a new line.
//
// The editing is github.com/chzyer/readline's: a small library with no
// work at init (unlike a full TUI framework such as bubbletea, whose
// renderer and dependencies every command would link and start). What
// it lacks, bracketed paste and newlines inside an entry, is done here
// by filtering its input: a newline or tab inside an entry is held as a
// visible mark (␤, ⇥) that readline edits as any character, and turned
// back when the entry is returned.
package lineedit

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chzyer/readline"
	"golang.org/x/term"
)

// The marks a newline and a tab take inside an entry while it is edited.
const (
	newlineMark = '␤'
	tabMark     = '⇥'
)

// Prompt is the marker before an entry; Continued the one of a line
// after a trailing backslash.
const (
	Prompt    = "› "
	Continued = "… "
)

// HistoryLimit is how many entries the history file keeps, the oldest
// dropped first.
const HistoryLimit = 1000

// ErrInterrupt is a Ctrl-C at an empty prompt; a Ctrl-C over text clears
// the line instead.
var ErrInterrupt = errors.New("interrupted")

// Config is what an Editor reads from and writes to.
type Config struct {
	// In and Out are the terminal.
	In  *os.File
	Out io.Writer
	// History is the file entries are kept in across sessions, created
	// 0600 (entries may hold what was pasted); "" keeps none.
	History string
	// Complete returns the candidates for the word before the cursor,
	// given the line up to the cursor: whole words, of which those that
	// start with the word are offered.
	Complete func(before string) (word string, candidates []string)
}

// Editor reads entries from a terminal.
type Editor struct {
	rl   *readline.Instance
	out  io.Writer
	in   *pasteFilter
	stop chan struct{} // ends the window-size watch
	// release keeps the terminal out of raw mode from Close on.
	release func()
}

// New returns an editor on cfg's terminal.
func New(cfg Config) (*Editor, error) {
	if cfg.History != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.History), 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(cfg.History, os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	fd, err := fdOf(cfg.In)
	if err != nil {
		return nil, err
	}
	// saved is the terminal's mode before raw, while raw; Close may
	// restore it while a ReadLine ends in another goroutine.
	var (
		rawMu  sync.Mutex
		saved  *term.State
		closed bool // never raw again: the terminal is given back
	)
	in := &pasteFilter{r: readline.NewCancelableStdin(cfg.In)}
	stop := make(chan struct{})
	rc := &readline.Config{
		Prompt:                 Prompt,
		HistoryFile:            cfg.History,
		HistoryLimit:           HistoryLimit,
		DisableAutoSaveHistory: true,
		HistorySearchFold:      true,
		Stdin:                  in,
		Stdout:                 cfg.Out,
		Stderr:                 cfg.Out,
		InterruptPrompt:        "^C",
		EOFPrompt:              "\n",
		FuncIsTerminal:         func() bool { return term.IsTerminal(fd) },
		FuncGetWidth: func() int {
			if w, _, err := term.GetSize(fd); err == nil && w > 0 {
				return w
			}
			return 80
		},
		FuncMakeRaw: func() error {
			rawMu.Lock()
			defer rawMu.Unlock()
			if closed {
				return io.EOF
			}
			st, err := term.MakeRaw(fd)
			if err == nil {
				saved = st
				// Bracketed paste: the terminal marks what is pasted.
				io.WriteString(cfg.Out, "\x1b[?2004h")
			}
			return err
		},
		// readline's own watch is never stopped: this one ends with
		// the editor.
		FuncOnWidthChanged: func(f func()) { watchWidth(f, stop) },
		FuncExitRaw: func() error {
			rawMu.Lock()
			defer rawMu.Unlock()
			if saved == nil {
				return nil
			}
			io.WriteString(cfg.Out, "\x1b[?2004l")
			err := term.Restore(fd, saved)
			saved = nil
			return err
		},
	}
	if cfg.Complete != nil {
		rc.AutoComplete = completer(cfg.Complete)
	}
	rl, err := readline.NewEx(rc)
	if err != nil {
		close(stop)
		in.Close()
		return nil, err
	}
	release := func() {
		rawMu.Lock()
		closed = true
		rawMu.Unlock()
	}
	return &Editor{rl: rl, out: cfg.Out, in: in, stop: stop, release: release}, nil
}

// fdOf returns f's descriptor without the side effect of f.Fd(), which
// puts it in blocking mode: a read blocked in the kernel could then not
// be woken by closing f.
func fdOf(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// ReadLine returns the next entry, its lines joined by "\n". io.EOF is
// Ctrl-D at an empty prompt; ErrInterrupt a Ctrl-C there.
func (e *Editor) ReadLine() (string, error) {
	e.rl.SetPrompt(Prompt)
	var entry strings.Builder
	for {
		line, err := e.rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			if line == "" && entry.Len() == 0 {
				return "", ErrInterrupt
			}
			// Ctrl-C over text drops the entry, as a shell does.
			entry.Reset()
			e.rl.SetPrompt(Prompt)
			continue
		}
		if err != nil {
			if entry.Len() == 0 {
				return "", err
			}
			// The input ended after a trailing backslash: what was
			// written is the entry.
			break
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			entry.WriteString(more)
			entry.WriteRune(newlineMark)
			e.rl.SetPrompt(Continued)
			continue
		}
		entry.WriteString(line)
		break
	}
	marked := entry.String()
	if strings.TrimSpace(marked) != "" {
		e.rl.SaveHistory(marked)
	}
	return unmark(marked), nil
}

// Close ends the editor, leaving the terminal as it found it; a ReadLine
// waiting returns io.EOF. The parts are closed one by one, not by
// readline's Close: that one fills the channel its key loop is about to
// send io.EOF on, and the loop's goroutine blocks forever.
func (e *Editor) Close() error {
	e.release()
	close(e.stop)
	e.in.Close()
	e.rl.Config.Stdin.Close()
	// The key loop ends on the terminal's close. The history file stays
	// open: closing it (Operation.Close, SetHistoryPath) races with that
	// loop, and an editor lives as long as its console.
	return e.rl.Terminal.Close()
}

// unmark turns the marks of an edited entry back into what they stand
// for.
func unmark(s string) string {
	return strings.NewReplacer(string(newlineMark), "\n", string(tabMark), "\t").Replace(s)
}

// completer adapts Config.Complete to readline's interface.
type completer func(before string) (string, []string)

func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	word, candidates := c(string(line[:pos]))
	var out [][]rune
	for _, cand := range candidates {
		if rest, ok := strings.CutPrefix(cand, word); ok {
			out = append(out, []rune(rest))
		}
	}
	return out, len([]rune(word))
}
