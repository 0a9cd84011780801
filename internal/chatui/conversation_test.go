package chatui

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// attached starts text's host with its control socket, under a DSH_HOME
// short enough for a socket's path, and returns its chat on std and a
// client of the socket; dial gives another.
func attached(t *testing.T, text string, std console.Stdio) (ch *Chat, c *control.Client, dial func() *control.Client) {
	t.Helper()
	home, err := os.MkdirTemp("", "dshv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("DSH_HOME", home)
	quiet := slog.New(slog.DiscardHandler)
	ch, local := startChat(t, text, std)
	file := ch.sessions.composition
	l, err := control.Listen(file, quiet)
	if err != nil {
		t.Fatal(err)
	}
	s := control.Serve(l, local, file, quiet)
	t.Cleanup(func() { s.Close() })
	dial = func() *control.Client {
		c, err := control.Dial(t.Context(), file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	return ch, dial(), dial
}

// userTexts is what the person said in request i to the model.
func userTexts(t *testing.T, srv *openaitest.Server, i int) []string {
	t.Helper()
	var out []string
	for _, m := range requestMessages(t, srv, i) {
		if m.Role == "user" {
			out = append(out, m.Text())
		}
	}
	return out
}

// TestAttachedConsolesTalkApart: a chat console attached to a host
// where another front end talks starts a conversation of its own, and
// its /new is its own: the other's requests carry its whole
// conversation, and nothing of the console's.
func TestAttachedConsolesTalkApart(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "A1"}, openaitest.Turn{Content: "B1"},
		openaitest.Turn{Content: "B2"}, openaitest.Turn{Content: "A2"})
	var out mcptest.SyncBuffer
	in := strings.NewReader("hello from B\n/new\nfresh B\n/quit\n")
	ch, first, dial := attached(t, chatComposition(t, srv), console.Stdio{In: in, Out: &out, Err: &out})
	ctx := t.Context()
	info, err := first.ChatSession(ctx, app.ChatSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var outA mcptest.SyncBuffer
	a := &chatFront{app: first, out: &outA, conv: info.Conversation}
	a.turn(ctx, "hello from A")
	if _, err := ch.Console(ctx, dial(), false, make(chan os.Signal)); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	a.turn(ctx, "again from A")
	if got := outA.String(); !strings.Contains(got, "A1") || !strings.Contains(got, "A2") {
		t.Fatalf("A's front end:\n%s", got)
	}
	if got := out.String(); !strings.Contains(got, "B1") || !strings.Contains(got, "new conversation") || !strings.Contains(got, "B2") {
		t.Fatalf("the console:\n%s", got)
	}
	for i, want := range [][]string{1: {"hello from B"}, 2: {"fresh B"}, 3: {"hello from A", "again from A"}} {
		if got := userTexts(t, srv, i); i > 0 && !slices.Equal(got, want) {
			t.Errorf("request %d carries %q, want %q", i, got, want)
		}
	}
}

// TestChatStartsAnewWhenTheHostDroppedItsConversation: a turn, or a
// command, naming a conversation the host no longer keeps starts a new
// one, says so, and is sent in it.
func TestChatStartsAnewWhenTheHostDroppedItsConversation(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "Hello."})
	_, c, _ := attached(t, chatComposition(t, srv), console.Stdio{In: strings.NewReader(""), Out: os.Stderr, Err: os.Stderr})
	ctx := t.Context()
	var out mcptest.SyncBuffer
	const dropped = "00112233445566778899aabbccddeeff"
	f := &chatFront{app: c, out: &out, conv: dropped}
	f.turn(ctx, "hi")
	got := out.String()
	if !strings.Contains(got, "no longer keeps this conversation") || !strings.Contains(got, "Hello.") || strings.Contains(got, "error") {
		t.Errorf("the turn in a dropped conversation:\n%s", got)
	}
	if f.conversation() == dropped || f.conversation() == "" {
		t.Errorf("the handle is still %q", f.conversation())
	}
	if got := userTexts(t, srv, 0); !slices.Equal(got, []string{"hi"}) {
		t.Errorf("the request carries %q", got)
	}
	said := len(out.String())
	f.setConversation(dropped)
	r, err := conversationApp{App: c, f: f}.Command(ctx, app.CommandRequest{Line: "/cost"})
	if err != nil || r.Error || !strings.Contains(r.Text, "0 prompt tokens") || !strings.Contains(out.String()[said:], "no longer keeps") {
		t.Errorf("/cost in a dropped conversation: %+v, %v; said %q", r, err, out.String()[said:])
	}
}
