package chatui

// What a resumed conversation shows: which one it is, and, in the
// console, what was said in it, compactly (the person's lines, the
// answers' first lines, one line per tool call); and the picker of
// --resume without an id.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
)

// continuing is the line --continue says of the session it picked.
func continuing(s app.Session) string {
	return fmt.Sprintf("continuing session %s (%d turns, last %s): %s", s.ID, s.Turns, age(s.Updated, time.Now()), console.OneLine(s.FirstLine, 60))
}

// age says how long before now t was, roughly: "5 min ago", "3 h ago",
// "2 days ago".
func age(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}

// Bounds of the transcript shown on resume: its last lines, and of an
// answer its first lines.
const (
	shownSaid          = 40
	shownAnswerLines   = 3
	transcriptMinWidth = 20
)

// showTranscript writes what was said in a resumed conversation on w (a
// display writer: it escapes), each line cut to cols columns.
func showTranscript(w io.Writer, info app.ChatInfo, cols int) {
	cols = max(cols-1, transcriptMinWidth)
	said := info.Transcript
	if n := len(said) - shownSaid; n > 0 {
		fmt.Fprintf(w, "  … %d earlier lines (the model has them all)\n", n)
		said = said[n:]
	}
	for _, s := range said {
		switch s.Role {
		case "user":
			line := "> " + flatLine(s.Text, 4*cols)
			if s.Unanswered {
				why := flatLine(s.Error, 4*cols) // an error may span lines
				if why == "" {
					why = "no answer"
				}
				line = fit(line, cols-len(" [unanswered: ]")-min(len(why), 30)) + " [unanswered: " + fit(why, 30) + "]"
			}
			fmt.Fprintln(w, fit(line, cols))
		case "assistant":
			lines := nonEmptyLines(s.Text)
			for i, l := range lines {
				if i == shownAnswerLines {
					fmt.Fprintf(w, "  … %d more lines\n", len(lines)-i)
					break
				}
				fmt.Fprintln(w, fit(l, cols))
			}
		case "tool":
			fmt.Fprintln(w, fit("  → "+flatLine(s.Text, 4*cols), cols))
		}
	}
	if info.Pending != "" {
		fmt.Fprintln(w, "(the last message got no answer: /retry sends it again)")
	}
}

// fit cuts s to cols columns, with "…".
func fit(s string, cols int) string {
	if runewidth.StringWidth(s) <= cols {
		return s
	}
	return runewidth.Truncate(s, max(cols, 1), "…")
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, " \t\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// errNoPick is a picker left without a choice.
var errNoPick = errors.New("no conversation picked")

// pickSession lists the saved conversations of the composition file
// (absolute) on w, newest first, numbered, and reads the number of one
// from in, a line (byte by byte: the console reads on from the same
// input). An empty line or the end of the input is a new conversation
// (""); an unknown number is an error.
func pickSession(in io.Reader, w io.Writer, dir, composition string, now time.Time) (string, error) {
	list, err := app.ListSessions(dir)
	if err != nil {
		return "", err
	}
	for _, warning := range list.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	var mine []app.Session
	for _, s := range list.Sessions {
		if s.Composition == composition && s.Turns+s.Unanswered > 0 {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		fmt.Fprintf(w, "no saved conversation of %s yet; starting a new one\n", composition)
		return "", nil
	}
	fmt.Fprintf(w, "saved conversations of %s:\n", composition)
	for i, s := range mine {
		turns := fmt.Sprintf("%d turns", s.Turns)
		if s.Turns == 1 {
			turns = "1 turn"
		}
		if s.Unanswered > 0 {
			turns += fmt.Sprintf(", %d unanswered", s.Unanswered)
		}
		fmt.Fprintf(w, "%3d  %-50s  %s, %s\n", i+1, fit(console.OneLine(s.FirstLine, 50), 50), turns, age(s.Updated, now))
	}
	fmt.Fprintf(w, "resume which (1-%d; Enter for a new conversation)? ", len(mine))
	line, err := readLine(in)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	line = strings.TrimSpace(line)
	if line == "" {
		fmt.Fprintln(w)
		return "", nil
	}
	n, err := strconv.Atoi(line)
	if err != nil || n < 1 || n > len(mine) {
		return "", fmt.Errorf("%w: %q is not a number from 1 to %d", errNoPick, line, len(mine))
	}
	return mine[n-1].ID, nil
}

// maxPickLine bounds the picker's answer.
const maxPickLine = 256

// readLine reads up to a newline one byte at a time, so that nothing past
// it is taken from in.
func readLine(in io.Reader) (string, error) {
	var b []byte
	var c [1]byte
	for len(b) < maxPickLine {
		n, err := in.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				return string(b), nil
			}
			b = append(b, c[0])
		}
		if err != nil {
			return string(b), err
		}
	}
	return string(b), fmt.Errorf("the answer is longer than %d bytes", maxPickLine)
}
