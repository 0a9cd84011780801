package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// chatIn returns the binary running chat args with DSH_HOME home (shared
// between the processes of a test).
func chatIn(t *testing.T, ctx context.Context, home string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := command(t, ctx, append([]string{"chat"}, args...)...)
	cmd.Env = append(cmd.Env, "DSH_HOME="+home) // the last one wins
	// One directory for the runs of one home, as a person resumes where
	// they worked: the system text names the working directory.
	cmd.Dir = home
	return cmd
}

// chatProcess is a running chat console: its stdin and its stdout lines.
type chatProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *mcptest.SyncBuffer
}

func startChat(t *testing.T, cmd *exec.Cmd) *chatProcess {
	t.Helper()
	p := &chatProcess{cmd: cmd, lines: make(chan string, 1000), stderr: &mcptest.SyncBuffer{}}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p
}

func (p *chatProcess) waitFor(t *testing.T, what string) string {
	t.Helper()
	for line := range p.lines {
		if strings.Contains(line, what) {
			return line
		}
	}
	t.Fatalf("the output ended before %q; stderr:\n%s", what, p.stderr.String())
	return ""
}

// requestMessages returns the raw messages of a recorded request.
func requestMessages(t *testing.T, r openaitest.Request) []string {
	t.Helper()
	msgs, err := r.Messages()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Raw)
	}
	return out
}

// TestChatResumeAfterSIGKILL: a chat process killed in the middle of its
// second turn (SIGKILL: nothing of it runs after) is resumed with
// --continue; the next request sends the model the first turn's messages
// byte for byte as the killed process sent them, and nothing of the turn
// in progress.
func TestChatResumeAfterSIGKILL(t *testing.T) {
	srv := openaitest.New(t, chatTurns()...)
	srv.Push(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_slow", Name: "mcp_call", Arguments: `{"tool":"mcp__demo__slow","arguments":{"ms":60000}}`}}},
		openaitest.Turn{Content: "Back again."},
	)
	file, events := chatComposition(t, srv)
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first := startChat(t, chatIn(t, ctx, home, "-c", file))
	first.waitFor(t, "chatting with")
	fmt.Fprintln(first.stdin, "What is 1+2?")
	first.waitFor(t, "The sum is 3.")
	fmt.Fprintln(first.stdin, "Sleep a minute.")
	waitLine(t, events, "slow started")
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	for range first.lines {
	}

	second := startChat(t, chatIn(t, ctx, home, "-c", file, "--continue"))
	second.waitFor(t, "resumed session")
	fmt.Fprintln(second.stdin, "Are you there?")
	second.waitFor(t, "Back again.")
	second.stdin.Close()
	for range second.lines {
	}
	if err := second.cmd.Wait(); err != nil {
		t.Errorf("exit: %v; stderr:\n%s", err, second.stderr.String())
	}

	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	// The killed turn's request held the first turn and its question;
	// the resumed one holds the first turn and the new question.
	killed, resumed := requestMessages(t, reqs[2]), requestMessages(t, reqs[3])
	if len(resumed) != len(killed) {
		t.Fatalf("the resumed request has %d messages, the killed one %d:\n%s\n---\n%s", len(resumed), len(killed), strings.Join(resumed, "\n"), strings.Join(killed, "\n"))
	}
	for i := range len(killed) - 1 {
		if resumed[i] != killed[i] {
			t.Errorf("message %d differs:\n resumed %s\n killed  %s", i, resumed[i], killed[i])
		}
	}
	if last := resumed[len(resumed)-1]; !strings.Contains(last, "Are you there?") {
		t.Errorf("the last message is %s", last)
	}
}

// runChatIn runs chat to the end with DSH_HOME home.
func runChatIn(t *testing.T, home string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return runToEnd(t, chatIn(t, ctx, home, args...))
}

// TestChatContinuePicksThisComposition: --continue resumes the last session
// of its composition file, not a later one of another composition, nor an
// earlier one of its own.
func TestChatContinuePicksThisComposition(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "one"}, openaitest.Turn{Content: "two"},
		openaitest.Turn{Content: "three"}, openaitest.Turn{Content: "four"},
	)
	fileA, _ := chatComposition(t, srv)
	fileB, _ := chatComposition(t, srv)
	home := t.TempDir()
	for _, run := range [][]string{
		{"-c", fileA, "-p", "alpha"},
		{"-c", fileA, "-p", "gamma"},
		{"-c", fileB, "-p", "beta"},
		{"-c", fileA, "--continue", "-p", "delta"},
	} {
		if code, _, stderr := runChatIn(t, home, run...); code != exitOK {
			t.Fatalf("chat %q: exit %d; stderr:\n%s", run, code, stderr)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	var texts []string
	msgs, _ := reqs[3].Messages()
	for _, m := range msgs {
		if m.Role != "system" {
			texts = append(texts, m.Role+":"+m.Text())
		}
	}
	if got, want := strings.Join(texts, " "), "user:gamma assistant:two user:delta"; got != want {
		t.Errorf("the continued request holds %q, want %q", got, want)
	}
}

func TestChatResumeUnknownID(t *testing.T) {
	srv := openaitest.New(t)
	file, _ := chatComposition(t, srv)
	code, _, stderr := runChatIn(t, t.TempDir(), "-c", file, "--resume", "20990101-000000-abcdef", "-p", "hi")
	if code != exitFail || !strings.Contains(stderr, `"20990101-000000-abcdef"`) {
		t.Errorf("exit %d; stderr:\n%s", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests for an unknown session", n)
	}
}

// TestChatSessionsAndResume drives the console in-process: /sessions lists
// the saved conversations, /resume ID switches back to one (the next
// request carries its history), and both are in /help.
func TestChatSessionsAndResume(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "Hello first."},
		openaitest.Turn{Content: "Hello second."},
		openaitest.Turn{Content: "Back in the first."},
	)
	file, _ := chatComposition(t, srv)
	home := t.TempDir()
	t.Setenv("DSH_HOME", home)
	in, typed := io.Pipe()
	defer typed.Close()
	var out mcptest.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runChat(context.Background(), []string{"-c", file}, Stdio{In: in, Out: &out, Err: &out}, make(chan os.Signal), func(bool) {})
	}()
	waitOut := func(what string) {
		t.Helper()
		mcptest.WaitFor(t, 60*time.Second, fmt.Sprintf("%q in the output", what), func() bool { return strings.Contains(out.String(), what) })
	}
	fmt.Fprintln(typed, "The first conversation")
	waitOut("Hello first.")
	entries, err := os.ReadDir(filepath.Join(home, "sessions"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("sessions: %v, %d files", err, len(entries))
	}
	firstID := strings.TrimSuffix(entries[0].Name(), ".jsonl")
	fmt.Fprintln(typed, "/new")
	waitOut("new conversation")
	fmt.Fprintln(typed, "The second conversation")
	waitOut("Hello second.")
	fmt.Fprintln(typed, "/sessions")
	waitOut("The first conversation")
	fmt.Fprintln(typed, "/resume "+firstID)
	waitOut("resumed session " + firstID)
	fmt.Fprintln(typed, "More?")
	waitOut("Back in the first.")
	fmt.Fprintln(typed, "/help")
	waitOut("/resume ID")
	fmt.Fprintln(typed, "/resume nope")
	waitOut(`no session "nope"`)
	typed.Close()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d", code)
	}

	text := out.String()
	var listing []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "conversation") && strings.Contains(l, "-") && !strings.Contains(l, "chatting") {
			listing = append(listing, l)
		}
	}
	if len(listing) < 2 || !strings.Contains(listing[0], "The second conversation") || !strings.Contains(listing[0], "(this one)") ||
		!strings.Contains(listing[1], firstID) || !strings.Contains(listing[1], "  1  ") {
		t.Errorf("/sessions listed:\n%s\n(output:\n%s)", strings.Join(listing, "\n"), text)
	}
	msgs, _ := srv.Requests()[2].Messages()
	var texts []string
	for _, m := range msgs {
		if m.Role != "system" {
			texts = append(texts, m.Text())
		}
	}
	if got, want := strings.Join(texts, "|"), "The first conversation|Hello first.|More?"; got != want {
		t.Errorf("after /resume the request holds %q, want %q", got, want)
	}
}
