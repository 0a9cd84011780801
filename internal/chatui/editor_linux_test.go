package chatui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/internal/testkit/ptytest"
)

// userTexts are the user messages of the model's requests, last of each.
func lastUserText(t *testing.T, srv *openaitest.Server, i int) string {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= i {
		t.Fatalf("%d requests, want more than %d", len(reqs), i)
	}
	msgs, err := reqs[i].Messages()
	if err != nil {
		t.Fatal(err)
	}
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].Role == "user" {
			return msgs[j].Text()
		}
	}
	t.Fatalf("request %d has no user message", i)
	return ""
}

// TestChatConsoleOnATerminal: on a real pty, a bracketed paste of two
// lines is one turn, Up recalls it (from the history file) and sends it
// again, Tab completes a command of the agent's (/cost), and Ctrl-D ends
// the console.
func TestChatConsoleOnATerminal(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	srv := openaitest.New(t, openaitest.Turn{Content: "first answer"}, openaitest.Turn{Content: "second answer"})
	p := ptytest.Open(t)
	std := console.Stdio{In: p.Pts, Out: p.Pts, Err: p.Pts}
	ch, h := startChat(t, chatComposition(t, srv), std)
	done := make(chan error, 1)
	go func() {
		_, err := ch.Console(context.Background(), h, false, make(chan os.Signal))
		done <- err
	}()
	const rawOn = "\x1b[?2004h" // the editor waits for an entry
	p.WaitShown(t, rawOn, 1)
	p.Type(t, "\x1b[200~line one\nline two\x1b[201~", "\r")
	p.WaitShown(t, "first answer", 1)
	p.WaitShown(t, rawOn, 2)
	p.Type(t, "\x1b[A", "\r")
	p.WaitShown(t, "second answer", 1)
	p.WaitShown(t, rawOn, 3)
	p.Type(t, "/cos", "\t", "\r")
	p.WaitShown(t, "this conversation:", 1)
	p.WaitShown(t, rawOn, 4)
	p.Type(t, "\x04")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Ctrl-D did not end the console:\n%q", p.Shown())
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (the paste as one turn, then again):\n%q", n, p.Shown())
	}
	for i := range 2 {
		if got := lastUserText(t, srv, i); got != "line one\nline two" {
			t.Errorf("turn %d sent %q", i+1, got)
		}
	}
	if shown := p.Shown(); !strings.Contains(shown, "› ") {
		t.Errorf("no prompt marker:\n%q", shown)
	}
}

// TestChatConsoleCtrlCAtThePrompt: in the editor's raw mode Ctrl-C is a
// key, not a signal; at the prompt, once says how to quit, twice quits.
func TestChatConsoleCtrlCAtThePrompt(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	srv := openaitest.New(t)
	p := ptytest.Open(t)
	ch, h := startChat(t, chatComposition(t, srv), console.Stdio{In: p.Pts, Out: p.Pts, Err: p.Pts})
	done := make(chan error, 1)
	go func() {
		_, err := ch.Console(context.Background(), h, false, make(chan os.Signal))
		done <- err
	}()
	p.WaitShown(t, "\x1b[?2004h", 1)
	p.Type(t, "\x03")
	p.WaitShown(t, "Ctrl-C again to quit", 1)
	p.WaitShown(t, "\x1b[?2004h", 2)
	p.Type(t, "\x03")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("two Ctrl-Cs at the prompt did not quit:\n%q", p.Shown())
	}
}
