package chatui

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/testkit/golden"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// chatVarying are the parts of chat's output that differ from run to run:
// the session id, the turn's duration, the working directory.
var chatVarying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"session_id":"[^"]*"`), `"session_id":"SESSION"`},
	{regexp.MustCompile(`"duration_ms":\d+`), `"duration_ms":0`},
	{regexp.MustCompile(`"cwd":"[^"]*"`), `"cwd":"CWD"`},
}

func chatStable(s string) string {
	for _, v := range chatVarying {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// TestChatOnceGolden: a scripted turn (a folded tool call, then the
// answer) for a script, in each output format, stdout and stderr byte for
// byte; "terminal" takes stderr for a terminal.
func TestChatOnceGolden(t *testing.T) {
	for _, tt := range []struct {
		name     string
		format   string
		terminal bool
	}{
		{"chat_text", FormatText, false},
		{"chat_text_terminal", FormatText, true},
		{"chat_json", FormatJSON, false},
		{"chat_stream_json", FormatStreamJSON, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(t, chatTurns()...)
			var stdout, stderr mcptest.SyncBuffer
			std := console.Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr}
			if tt.terminal {
				std.Terminal = func(v any) bool { return v == any(&stderr) }
			}
			ch, h := startChat(t, chatComposition(t, srv), std)
			if _, err := ch.Once(context.Background(), h, "What is 1+2?", tt.format, false, make(chan os.Signal)); err != nil {
				t.Fatalf("%v; stderr:\n%s", err, stderr.String())
			}
			golden.Check(t, tt.name, []byte(chatStable("--- stdout\n"+stdout.String()+"--- stderr\n"+stderr.String())), *update)
		})
	}
}

// TestChatConsoleGolden: the chat console for a scripted turn, then a
// command of chat's own without its argument, then /quit.
func TestChatConsoleGolden(t *testing.T) {
	srv := openaitest.New(t, chatTurns()...)
	var out mcptest.SyncBuffer
	in := strings.NewReader("What is 1+2?\n/resume\n/quit\n")
	ch, h := startChat(t, chatComposition(t, srv), console.Stdio{In: in, Out: &out, Err: &out})
	if _, err := ch.Console(context.Background(), h, false, make(chan os.Signal)); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	golden.Check(t, "chat_console", []byte(out.String()), *update)
}

// TestChatConsoleAttached: the chat console on a running host, through
// its control socket, prints what it prints on a host of its own.
func TestChatConsoleAttached(t *testing.T) {
	home, err := os.MkdirTemp("", "dshc") // short: a socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	quiet := slog.New(slog.DiscardHandler)
	srv := openaitest.New(t, chatTurns()...)
	var out mcptest.SyncBuffer
	in := strings.NewReader("What is 1+2?\n/resume\n/quit\n")
	ch, local := startChat(t, chatComposition(t, srv), console.Stdio{In: in, Out: &out, Err: &out})
	file := ch.sessions.composition
	l, err := control.Listen(file, quiet)
	if err != nil {
		t.Fatal(err)
	}
	s := control.Serve(l, local, file, quiet)
	defer s.Close()
	c, err := control.Dial(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := ch.Console(t.Context(), c, false, make(chan os.Signal)); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	golden.Check(t, "chat_console", []byte(out.String()), false)
}

// TestChatOnceAttached: chat -p on a running host through its control
// socket prints what it prints on a host of its own, byte for byte.
func TestChatOnceAttached(t *testing.T) {
	home, err := os.MkdirTemp("", "dshc") // short: a socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, format := range []string{FormatText, FormatStreamJSON} {
		t.Run(format, func(t *testing.T) {
			srv := openaitest.New(t, chatTurns()...)
			var stdout, stderr mcptest.SyncBuffer
			ch, local := startChat(t, chatComposition(t, srv), console.Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			file := ch.sessions.composition
			l, err := control.Listen(file, quiet)
			if err != nil {
				t.Fatal(err)
			}
			s := control.Serve(l, &app.Local{Host: local.Host, File: file}, file, quiet)
			defer s.Close()
			c, err := control.Dial(t.Context(), file)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := ch.Once(t.Context(), c, "What is 1+2?", format, false, make(chan os.Signal)); err != nil {
				t.Fatalf("%v; stderr:\n%s", err, stderr.String())
			}
			name := map[string]string{FormatText: "chat_text", FormatStreamJSON: "chat_stream_json"}[format]
			golden.Check(t, name, []byte(chatStable("--- stdout\n"+stdout.String()+"--- stderr\n"+stderr.String())), false)
		})
	}
}
