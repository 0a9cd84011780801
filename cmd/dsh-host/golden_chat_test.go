package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	goldenfile "github.com/dsh-host/dsh-host/internal/testkit/golden"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

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
// answer) under -p in each output format, stdout and stderr byte for
// byte; "terminal" takes stderr for a terminal.
func TestChatOnceGolden(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		terminal bool
	}{
		{"chat_text", nil, false},
		{"chat_text_terminal", nil, true},
		{"chat_json", []string{"--output-format", "json"}, false},
		{"chat_stream_json", []string{"--output-format", "stream-json"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(t, chatTurns()...)
			file, _ := chatComposition(t, srv)
			t.Setenv("DSH_HOME", t.TempDir())
			var stdout, stderr mcptest.SyncBuffer
			std := Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr}
			if tt.terminal {
				std.Terminal = func(v any) bool { return v == any(&stderr) }
			}
			args := append([]string{"-c", file, "-p", "What is 1+2?"}, tt.args...)
			if code := runChat(context.Background(), args, std, make(chan os.Signal), func(bool) {}); code != exitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
			}
			goldenfile.Check(t, tt.name, []byte(chatStable("--- stdout\n"+stdout.String()+"--- stderr\n"+stderr.String())), *update)
		})
	}
}

// TestChatConsoleGolden: the chat console for a scripted turn, then a
// line that is not a message, then /quit.
func TestChatConsoleGolden(t *testing.T) {
	srv := openaitest.New(t, chatTurns()...)
	file, _ := chatComposition(t, srv)
	t.Setenv("DSH_HOME", t.TempDir())
	var out mcptest.SyncBuffer
	in := strings.NewReader("What is 1+2?\n/resume\n/quit\n")
	if code := runChat(context.Background(), []string{"-c", file}, Stdio{In: in, Out: &out, Err: &out}, make(chan os.Signal), func(bool) {}); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	goldenfile.Check(t, "chat_console", []byte(out.String()), *update)
}
