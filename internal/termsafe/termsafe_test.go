package termsafe

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lmittmann/tint"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain ASCII", "Add two numbers.", "Add two numbers."},
		{"UTF-8 text of several scripts", "Grüße, 日本語, עברית, emoji 🙂, e\u0301", "Grüße, 日本語, עברית, emoji 🙂, e\u0301"},
		{"tab and newline are layout", "line one\n\tline two\n", "line one\n\tline two\n"},
		{"CRLF line ends stay", "one\r\ntwo\r\n", "one\r\ntwo\r\n"},
		{"OSC title", "\x1b]0;pwned\x07", `\u001b]0;pwned\u0007`},
		{"OSC title ended by ST", "\x1b]0;pwned\x1b\\", `\u001b]0;pwned\u001b\`},
		{"CSI clear screen", "\x1b[2J\x1b[H", `\u001b[2J\u001b[H`},
		{"SGR colour", "\x1b[31mred\x1b[0m", `\u001b[31mred\u001b[0m`},
		{"backspaces", "safe\b\b\b\bevil", `safe\u0008\u0008\u0008\u0008evil`},
		{"lone carriage return", "ok\revil", `ok\u000devil`},
		{"carriage return at the end", "ok\r", `ok\u000d`},
		{"bell", "ding\a", `ding\u0007`},
		{"NUL, vertical tab, form feed", "a\x00b\vc\fd", `a\u0000b\u000bc\u000cd`},
		{"DEL", "a\x7fb", `a\u007fb`},
		{"C1 CSI as UTF-8", "a\u009b2Jb", `a\u009b2Jb`},
		{"C1 NEL as UTF-8", "a\u0085b", `a\u0085b`},
		{"raw 8-bit CSI is invalid UTF-8", "a\x9b2Jb", `a\x9b2Jb`},
		{"invalid UTF-8 bytes", "ok\xff\xfe\xc3", `ok\xff\xfe\xc3`},
		{"truncated rune", "\xe6\x97", `\xe6\x97`},
		{"bidi override", "access\u202e level", `access\u202e level`},
		{"bidi embeddings and pop", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escape(tt.in)
			if got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Escape(got); again != got {
				t.Errorf("Escape is not idempotent: Escape(%q) = %q", got, again)
			}
			if i := firstUnsafe(got); i >= 0 {
				t.Errorf("the result %q still has an unsafe byte at %d", got, i)
			}
		})
	}
}

// TestWriter: what reaches the writer is escaped, and Write reports the
// length it was given, as io.Writer requires.
func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	in := "title \x1b]0;pwned\x07 clear \x1b[2J\nnext line\n"
	n, err := fmt.Fprint(w, in)
	if err != nil || n != len(in) {
		t.Fatalf("Fprint = %d, %v; want %d, nil", n, err, len(in))
	}
	want := `title \u001b]0;pwned\u0007 clear \u001b[2J` + "\nnext line\n"
	if got := buf.String(); got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterError(t *testing.T) {
	if n, err := NewWriter(failingWriter{}).Write([]byte("x")); n != 0 || err == nil {
		t.Errorf("Write = %d, %v; want 0 and the error", n, err)
	}
}

type text string

func (s text) MarshalText() ([]byte, error) { return []byte(s), nil }

// sgr matches tint's own colour sequences, the only escape sequences a
// terminal may get from the log.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestHandlerWithTint: through the coloured handler, whatever a server put in
// a log message or value (its stderr line, an error, a group, a value given
// to With) shows escaped; tint's colours stay; the record's other values are
// untouched.
func TestHandlerWithTint(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(NewHandler(tint.NewHandler(&buf, &tint.Options{Level: slog.LevelDebug, TimeFormat: time.TimeOnly})))
	evil := "\x1b]0;pwned\x07\x1b[2J"
	err := fmt.Errorf("wrapped: %w", errors.New("boom \x1b[2J"))
	logger.With("server", "s\x1b[2J").WithGroup("g").Info("msg \x1b]0;pwned\x07",
		"line", evil,
		"quoted line", "with spaces "+evil,
		"literal", `looks like \x1b[2J but is text`,
		"err", err,
		"bytes", []byte(evil),
		"marshaler", text(evil),
		"any", []string{evil},
		"group", slog.GroupValue(slog.String("inner", evil)),
		"n", 42,
		"ok", true,
		"took", 3*time.Second,
	)
	out := buf.String()
	if rest := sgr.ReplaceAllString(out, ""); strings.ContainsAny(rest, "\x1b\x07") {
		t.Errorf("the log line carries a raw ESC or BEL besides tint's colours:\n%q", out)
	}
	if !sgr.MatchString(out) {
		t.Errorf("tint's colours are gone:\n%q", out)
	}
	for _, want := range []string{`msg \u001b]0;pwned\u0007`, `u001b]0;pwned`, `u001b[2J`, `boom `, "42", "true", "3s"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log line lacks %q:\n%q", want, out)
		}
	}
	if n := strings.Count(out, "pwned"); n != 7 {
		t.Errorf("pwned shows %d times, want 7 (message, line, quoted line, bytes, marshaler, any, group):\n%q", n, out)
	}
}

// TestHandlerKeepsErrors: an escaped error still unwraps to the original, so
// handlers and ReplaceAttr that look for errors find them.
func TestHandlerKeepsErrors(t *testing.T) {
	sentinel := errors.New("sentinel \x1b[2J")
	var got slog.Value
	h := NewHandler(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "err" {
				got = a.Value
			}
			return a
		},
	}))
	slog.New(h).Error("failed", "err", fmt.Errorf("call: %w", sentinel))
	err, ok := got.Any().(error)
	if !ok {
		t.Fatalf("err reached the handler as %T, not an error", got.Any())
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(%v, sentinel) = false", err)
	}
	if want := `call: sentinel \u001b[2J`; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

// TestHandlerEnabled: the level decision is the wrapped handler's.
func TestHandlerEnabled(t *testing.T) {
	h := NewHandler(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if h.Enabled(t.Context(), slog.LevelInfo) || !h.Enabled(t.Context(), slog.LevelWarn) {
		t.Error("Enabled does not follow the wrapped handler's level")
	}
}
