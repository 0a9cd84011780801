package mcptest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Logs is a slog.Handler that keeps every record, for tests that check
// what was logged.
type Logs struct {
	mu   sync.Mutex
	recs []LogRecord
}

// LogRecord is one kept record, its attributes as key=value text.
type LogRecord struct {
	Level slog.Level
	Msg   string
	Attrs string
}

func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *Logs) WithGroup(string) slog.Handler            { return l }
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.String())
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, LogRecord{r.Level, r.Message, strings.Join(attrs, " ")})
	l.mu.Unlock()
	return nil
}

// Find returns the records at level whose message contains substr.
func (l *Logs) Find(level slog.Level, substr string) []LogRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []LogRecord
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Msg, substr) {
			out = append(out, r)
		}
	}
	return out
}

// Has reports whether a record at level has substr in its message.
func (l *Logs) Has(level slog.Level, substr string) bool {
	return len(l.Find(level, substr)) > 0
}

// Dump returns every record, one a line, for a failure message.
func (l *Logs) Dump() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		fmt.Fprintf(&b, "%s %s %s\n", r.Level, r.Msg, r.Attrs)
	}
	return b.String()
}
