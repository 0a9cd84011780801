package console

// A call's live progress line on a terminal.

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/mattn/go-runewidth"

	"github.com/dsh-host/dsh-host/internal/termsafe"
	"github.com/dsh-host/dsh-host/services/tools"
)

// ProgressLine is a call's live progress on a terminal: one line, rewritten
// in place at each report and erased when the call ends. w is the raw
// terminal (the line's own \r and erase codes must reach it); the server's
// message is escaped.
type ProgressLine struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	shown bool
	width int // the terminal's columns; 0: unknown
}

// progressWidth caps the line, so that it never wraps on a common terminal
// (a wrapped line cannot be rewritten with \r).
const progressWidth = 78

// NewProgressLine returns the line for a call labelled label on w.
func NewProgressLine(w io.Writer, label string) *ProgressLine {
	return &ProgressLine{w: w, label: label}
}

// SetWidth cuts the line to a terminal of cols columns (its last one left
// free: a line that reaches it wraps on some terminals, and a wrapped line
// cannot be rewritten with \r). Unknown (0), it is cut at progressWidth.
func (l *ProgressLine) SetWidth(cols int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.width = cols
}

// Report shows p.
func (l *ProgressLine) Report(p tools.Progress) {
	l.Say(l.label + ": " + progressText(p))
}

// Say shows text on the line as it is (escaped already), cut to fit: by
// the columns its characters take, a wide one two.
func (l *ProgressLine) Say(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cols := progressWidth
	if l.width > 1 {
		cols = l.width - 1
	}
	if runewidth.StringWidth(text) > cols {
		text = runewidth.Truncate(text, cols, "…")
	}
	fmt.Fprintf(l.w, "\r\x1b[K%s", text)
	l.shown = true
}

// Clear erases the line, if one is shown.
func (l *ProgressLine) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}

// progressText is "3/5 (60%) message", "3 message" without a total.
func progressText(p tools.Progress) string {
	s := trimFloat(p.Progress)
	if p.Total > 0 {
		s += fmt.Sprintf("/%s (%d%%)", trimFloat(p.Total), int(100*p.Progress/p.Total))
	}
	if msg := strings.Join(strings.Fields(p.Message), " "); msg != "" {
		s += " " + termsafe.Escape(msg)
	}
	return s
}

func trimFloat(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%.2f", f), ".00") }

// ProgressLineOn returns what shows a call's progress on w, a terminal
// (the call's progress channel), and the function that erases the line
// when the call is over. With a nil w (not a terminal) progress is not
// shown: the channel is nil.
func ProgressLineOn(w io.Writer, label string) (report func(tools.Progress), clear func()) {
	if w == nil {
		return nil, func() {}
	}
	l := NewProgressLine(w, label)
	return l.Report, l.Clear
}
