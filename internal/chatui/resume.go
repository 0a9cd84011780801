package chatui

// What a resumed conversation shows: which one it is, and, in the
// console, what was said in it (compactly: the person's lines, the
// answers' text, one line per tool call).

import (
	"fmt"
	"time"

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
