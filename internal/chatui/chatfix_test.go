package chatui

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestChatRetryAfterAFailedTurn: a turn the API refuses keeps the
// person's message, which /retry sends again; once answered, nothing is
// left to retry.
func TestChatRetryAfterAFailedTurn(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	srv := openaitest.New(t, openaitest.Turn{Status: 400}, openaitest.Turn{Content: "Answered."})
	var out mcptest.SyncBuffer
	in := strings.NewReader("Keep me.\n/retry\n/retry\n/quit\n")
	ch, h := startChat(t, chatComposition(t, srv), console.Stdio{In: in, Out: &out, Err: &out})
	if _, err := ch.Console(context.Background(), h, false, make(chan os.Signal)); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"your message is kept: /retry sends it again", "sending again: Keep me.\nAnswered.", "no message to send again"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if msgs := requestMessages(t, srv, 1); msgs[len(msgs)-1].Text() != "Keep me." {
		t.Errorf("the retried request ends with %q", msgs[len(msgs)-1].Text())
	}
}

// requestMessages decodes request i's messages.
func requestMessages(t *testing.T, srv *openaitest.Server, i int) []openaitest.Message {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= i {
		t.Fatalf("%d requests, want more than %d", len(reqs), i)
	}
	m, err := reqs[i].Messages()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestChatOnceCutAnswer: an answer the model stopped at its output limit
// (finish_reason length) is printed, and the run fails saying it was
// cut; under json the result says so in subtype and is_error.
func TestChatOnceCutAnswer(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	for _, format := range []string{FormatText, FormatJSON} {
		t.Run(format, func(t *testing.T) {
			srv := openaitest.New(t, openaitest.Turn{Content: "The first half", Finish: "length"})
			var stdout, stderr mcptest.SyncBuffer
			ch, h := startChat(t, chatComposition(t, srv), console.Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			_, err := ch.Once(context.Background(), h, "Write a lot.", format, false, make(chan os.Signal))
			if !errors.Is(err, app.ErrCut) {
				t.Errorf("err = %v, want ErrCut", err)
			}
			if format == FormatText {
				if stdout.String() != "The first half\n" {
					t.Errorf("stdout %q", stdout.String())
				}
				return
			}
			var r jsonResult
			if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
				t.Fatalf("%v: %q", err, stdout.String())
			}
			if r.Subtype != "error_max_tokens" || !r.IsError || r.Result != "The first half" || !strings.Contains(r.Error, "output limit") {
				t.Errorf("result %+v", r)
			}
		})
	}
}

// TestChatOnceNoAgentPrintsAResult: under --output-format json a -p
// whose agent is not running writes an error result on stdout, not
// nothing.
func TestChatOnceNoAgentPrintsAResult(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	t.Setenv("CHAT_TEST_KEY", "")
	srv := openaitest.New(t)
	for _, format := range []string{FormatJSON, FormatStreamJSON} {
		t.Run(format, func(t *testing.T) {
			var stdout, stderr mcptest.SyncBuffer
			// The key's variable is empty: the agent does not start.
			ch, h := startChat(t, strings.Replace(chatComposition(t, srv), "apiKeyEnv: CHAT_TEST_KEY", "apiKeyEnv: CHAT_TEST_NO_SUCH_KEY", 1), console.Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			if _, err := ch.Once(context.Background(), h, "hi", format, false, make(chan os.Signal)); err == nil {
				t.Fatal("no error without an agent")
			}
			var r jsonResult
			if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
				t.Fatalf("stdout is not one result object: %v: %q", err, stdout.String())
			}
			if r.Type != "result" || !r.IsError || r.Subtype != "error_during_execution" || !strings.Contains(r.Error, "agent") {
				t.Errorf("result %+v", r)
			}
		})
	}
}

// TestTwoQuickCtrlCsQuit: a Ctrl-C during a turn cancels it; a second
// within a second quits, as one at the prompt after the first does; one
// later only arms the quit.
func TestTwoQuickCtrlCsQuit(t *testing.T) {
	for _, c := range []struct {
		after time.Duration
		quits bool
	}{{300 * time.Millisecond, true}, {2 * time.Second, false}} {
		var out strings.Builder
		now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
		f := &chatFront{out: &out, clock: func() time.Time { return now }}
		ctx, done := f.lineContext(context.Background())
		quits := 0
		f.interrupt(func() { quits++ })
		if ctx.Err() == nil || quits != 0 {
			t.Fatalf("the first Ctrl-C: turn cancelled %v, quits %d", ctx.Err() != nil, quits)
		}
		now = now.Add(c.after)
		f.interrupt(func() { quits++ })
		done()
		if got := quits == 1; got != c.quits {
			t.Errorf("a second Ctrl-C %v later: quits %d, want quit %v; output %q", c.after, quits, c.quits, out.String())
		}
		if !c.quits && !strings.Contains(out.String(), "Ctrl-C again to quit") {
			t.Errorf("a later Ctrl-C does not arm the quit: %q", out.String())
		}
	}
}

// TestLiveLineFitsTheTerminal: the live line of a call and of its
// progress is cut to the terminal's width, counted in the columns its
// characters take (a CJK one two), never inside a character.
func TestLiveLineFitsTheTerminal(t *testing.T) {
	var term strings.Builder
	live := newLiveProgress(&term, nil)
	live.size = func() (int, int) { return 40, 24 }
	calls := terminalCalls{out: &term, live: live}
	lastLine := func() string {
		s := term.String()
		return s[strings.LastIndex(s, "\x1b[K")+len("\x1b[K"):]
	}
	calls.event(app.ChatEvent{Kind: app.ChatCallStart, Call: &app.ChatCall{Name: "mcp_call", Arguments: `{"tool":"mcp__files__read","arguments":{"path":"文書/とても長い名前のファイル.txt"}}`}})
	if got := lastLine(); runewidth.StringWidth(got) > 39 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("call line %q: %d columns, want at most 39, cut with …", got, runewidth.StringWidth(got))
	}
	live.report()("mcp_call", tools.Progress{Progress: 1, Total: 3, Message: "読み込み中 " + strings.Repeat("ファイル ", 10)})
	if got := lastLine(); runewidth.StringWidth(got) > 39 || !utf8.ValidString(got) {
		t.Errorf("progress line %q: %d columns, want at most 39", got, runewidth.StringWidth(got))
	}
}

// TestResumeShowsTheTranscriptAndPicks: --resume without an id lists the
// composition's conversations (first line, turns, age), newest first, and
// resumes the one picked by its number; the console then shows what was
// said in it: the person's line, the tool call, the answer. /resume ID
// shows it too.
func TestResumeShowsTheTranscriptAndPicks(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	srv := openaitest.New(t, append(chatTurns(), openaitest.Turn{Content: "Second answer."})...)
	var out mcptest.SyncBuffer
	ch, a := startChat(t, chatComposition(t, srv), console.Stdio{In: strings.NewReader(""), Out: &out, Err: &out})
	ctx := context.Background()
	for _, prompt := range []string{"What is 1+2?", "And now?"} {
		if _, err := ch.Once(ctx, a, prompt, FormatText, false, make(chan os.Signal)); err != nil {
			t.Fatalf("%s: %v\n%s", prompt, err, out.String())
		}
	}
	c, err := host.ReadComposition(a.File, nil)
	if err != nil {
		t.Fatal(err)
	}
	var screen mcptest.SyncBuffer
	std := console.Stdio{In: strings.NewReader("2\n/quit\n"), Out: &screen, Err: &screen}
	picked, err := New(c, a.File, Resume{Pick: true}, std)
	if err != nil {
		t.Fatalf("%v\n%s", err, screen.String())
	}
	if _, err := picked.Console(ctx, a, false, make(chan os.Signal)); err != nil {
		t.Fatalf("%v\n%s", err, screen.String())
	}
	got := screen.String()
	for _, want := range []string{
		"  1  And now?", "1 turn, just now",
		"  2  What is 1+2?",
		"resume which (1-2; Enter for a new conversation)? ",
		"> What is 1+2?\n  → mcp_call {\"tool\":\"mcp__demo__add\",\"arguments\":{\"a\":1,\"b\":2}}\nThe sum is 3.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got[strings.Index(got, "resumed session"):], "And now?") {
		t.Errorf("the other conversation's transcript is shown:\n%s", got)
	}

	// /resume of the other one, in the console, shows its transcript.
	list, err := a.ChatSessions(ctx, app.ChatSessionsRequest{})
	if err != nil || len(list.Sessions) != 2 {
		t.Fatalf("sessions: %+v %v", list, err)
	}
	var screen2 mcptest.SyncBuffer
	f := &chatFront{app: a, out: &screen2}
	f.resume(ctx, list.Sessions[0].ID)
	if got := screen2.String(); !strings.Contains(got, "> And now?\nSecond answer.\n") {
		t.Errorf("/resume shows:\n%s", got)
	}
}

// TestPickerRefusesAnUnknownNumber: a number out of the list is an error
// naming the range; an empty answer is a new conversation.
func TestPickerRefusesAnUnknownNumber(t *testing.T) {
	dir := t.TempDir()
	s, err := sessions.New(dir, "/c.yml", "m")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendUnanswered("m", "Hello?", nil, "cancelled"); err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	if _, err := pickSession(strings.NewReader("7\n"), &w, dir, "/c.yml", time.Now()); err == nil || !strings.Contains(err.Error(), "not a number from 1 to 1") {
		t.Errorf("7: %v\n%s", err, w.String())
	}
	if id, err := pickSession(strings.NewReader("\n"), &w, dir, "/c.yml", time.Now()); id != "" || err != nil {
		t.Errorf("Enter: %q %v", id, err)
	}
	if id, err := pickSession(strings.NewReader("1"), &w, dir, "/c.yml", time.Now()); id != s.ID || err != nil {
		t.Errorf("1 then the end of the input: %q %v", id, err)
	}
}

// TestBareResumePicks: --resume alone (last, or before another flag)
// asks for the picker; --resume ID does not; under -p the picker is a
// usage error.
func TestBareResumePicks(t *testing.T) {
	for _, c := range []struct {
		args     []string
		pick     bool
		id       string
		checkErr bool
	}{
		{[]string{"--resume"}, true, "", false},
		{[]string{"--resume", "--yes"}, true, "", false},
		{[]string{"--resume", "20261206-abc"}, false, "20261206-abc", false},
		{[]string{"--resume", "-p", "hi"}, true, "", true},
	} {
		fs := flag.NewFlagSet("chat", flag.ContinueOnError)
		var f Flags
		f.Register(fs)
		args := f.BareResume(fs, c.args)
		if err := fs.Parse(args); err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if err := f.Parsed(fs); err != nil {
			t.Errorf("%q: %v", c.args, err)
		}
		r := f.Resume()
		if r.Pick != c.pick || r.ID != c.id || (f.Check() != nil) != c.checkErr {
			t.Errorf("%q: %+v, check %v", c.args, r, f.Check())
		}
	}
}
