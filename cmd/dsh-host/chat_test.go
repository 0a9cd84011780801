package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// chatComposition is the fixture server (folded) and an agent on srv whose
// key is read from CHAT_TEST_KEY; events is the fixture's event file.
func chatComposition(t *testing.T, srv *openaitest.Server) (file, events string) {
	t.Helper()
	t.Setenv("CHAT_TEST_KEY", "sk-chat-test")
	events = filepath.Join(t.TempDir(), "events")
	file = writeComposition(t, fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
      args: [-progress]
      env: {FIXTURE_CANCEL_FILE: %q}
      sandbox: {write: [%q]}
  - id: fold
    name: mcp-fold
  # These tests drive the model's calls; chat's built-in ask before a
  # writing tool has its own tests (services/policy, chat_approve_test.go).
  - id: policy
    name: policy
    config:
      rules: [{callers: [chat], action: allow}]
  - id: agent
    name: agent
    config:
      baseUrl: %s
      apiKeyEnv: CHAT_TEST_KEY
`, mcptest.FixtureBinary(t), events, filepath.Dir(events), srv.URL))
	return file, events
}

func chatTurns() []openaitest.Turn {
	return []openaitest.Turn{
		{
			Reasoning: "add them",
			ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "mcp_call", Arguments: `{"tool":"mcp__demo__add","arguments":{"a":1,"b":2}}`}},
		},
		{Content: "The sum is 3.", Usage: &openaitest.Usage{PromptTokens: 50, CompletionTokens: 4}},
	}
}

func TestChatPrintExitCodes(t *testing.T) {
	t.Run("an answer", func(t *testing.T) {
		srv := openaitest.New(t, chatTurns()...)
		file, _ := chatComposition(t, srv)
		code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "What is 1+2?")
		if code != exitOK {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		// stdout is the answer alone, for a script; the rest is stderr.
		if stdout != "The sum is 3.\n" {
			t.Errorf("stdout = %q", stdout)
		}
		for _, w := range []string{"→ mcp_call", "add them", "tokens: 50 prompt"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderr)
			}
		}
	})
	t.Run("a refused key", func(t *testing.T) {
		srv := openaitest.New(t, openaitest.Turn{Status: 401})
		file, _ := chatComposition(t, srv)
		code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "hi")
		if code != exitFail || stdout != "" || !strings.Contains(stderr, "CHAT_TEST_KEY") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
		}
		if strings.Contains(stderr, "sk-chat-test") {
			t.Errorf("stderr shows the key:\n%s", stderr)
		}
	})
	t.Run("no agent entry", func(t *testing.T) {
		file := writeComposition(t, greeterComposition)
		code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "hi")
		if code != exitFail || stdout != "" || !strings.Contains(stderr, "name: agent") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
		}
	})
	t.Run("an empty prompt", func(t *testing.T) {
		code, _, stderr := dshHost(t, "chat", "-p", " ")
		if code != exitUsage {
			t.Errorf("exit %d; stderr:\n%s", code, stderr)
		}
	})
}

// TestChatReasoningDimmed runs chat -p in-process with stderr taken for a
// terminal: the reasoning is dimmed, and the model's control characters in
// it are escaped, not sent to the terminal.
func TestChatReasoningDimmed(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Reasoning: "Think\x1b]0;title\x07.", Content: "Done."},
	)
	file, _ := chatComposition(t, srv)
	t.Setenv("DSH_HOME", t.TempDir())
	var stdout, stderr mcptest.SyncBuffer
	isErr := func(v any) bool { return v == any(&stderr) }
	code := runChat(context.Background(), []string{"-c", file, "-p", "hi"},
		Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr, Terminal: isErr}, make(chan os.Signal), func(bool) {})
	if code != exitOK || stdout.String() != "Done.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout.String(), stderr.String())
	}
	got := stderr.String()
	if !strings.Contains(got, "\x1b[2mThin\x1b[22m") {
		t.Errorf("the reasoning is not dimmed: %q", got)
	}
	if strings.Contains(got, "\x1b]0;") || strings.Contains(got, "\x07") {
		t.Errorf("the model's escape sequence reached the terminal: %q", got)
	}
}

// TestChatProgress runs chat -p in-process with stderr taken for a
// terminal: a tool call's progress shows on one line, erased before the
// call's one line with its outcome; stdout is still the answer alone.
func TestChatProgress(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_p", Name: "mcp_call", Arguments: `{"tool":"mcp__demo__progress","arguments":{"steps":3,"ms":20}}`}}},
		openaitest.Turn{Content: "Done."},
	)
	file, _ := chatComposition(t, srv)
	t.Setenv("DSH_HOME", t.TempDir())
	var stdout, stderr mcptest.SyncBuffer
	isErr := func(v any) bool { return v == any(&stderr) }
	code := runChat(context.Background(), []string{"-c", file, "-p", "hi"},
		Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr, Terminal: isErr}, make(chan os.Signal), func(bool) {})
	if code != exitOK || stdout.String() != "Done.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout.String(), stderr.String())
	}
	got := stderr.String()
	if !strings.Contains(got, "\r\x1b[Kmcp_call: 1/3 (33%) step 1 of 3") || !strings.Contains(got, "\r\x1b[K✓ mcp_call {\"tool\":\"mcp__demo__progress\",\"arguments\":{\"steps\":3,\"ms\":20}} → 18 characters\n") {
		t.Errorf("want the progress line, then erased before the call's one line with its outcome: %q", got)
	}
}

// TestChatConsole drives the chat console in-process: a message, a slash
// command, a Ctrl-C during a slow tool call (which reaches the server), a
// message after it, and two Ctrl-Cs at the prompt to quit.
func TestChatConsole(t *testing.T) {
	srv := openaitest.New(t, chatTurns()...)
	srv.Push(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_slow", Name: "mcp_call", Arguments: `{"tool":"mcp__demo__slow","arguments":{"ms":60000}}`}}},
		openaitest.Turn{Content: "Still here."},
	)
	file, events := chatComposition(t, srv)
	t.Setenv("DSH_HOME", t.TempDir())
	in, typed := io.Pipe()
	defer typed.Close()
	var out mcptest.SyncBuffer
	interrupts := make(chan os.Signal)
	released := make(chan bool, 1)
	done := make(chan int, 1)
	go func() {
		done <- runChat(context.Background(), []string{"-c", file}, Stdio{In: in, Out: &out, Err: &out}, interrupts, func(byInterrupt bool) { released <- byInterrupt })
	}()
	waitOut := func(what string) {
		t.Helper()
		mcptest.WaitFor(t, 60*time.Second, fmt.Sprintf("%q in the output", what), func() bool { return strings.Contains(out.String(), what) })
	}
	fmt.Fprintln(typed, "What is 1+2?")
	waitOut("The sum is 3.")
	fmt.Fprintln(typed, "/model")
	waitOut("model: deepseek-flash")

	fmt.Fprintln(typed, "Sleep a minute.")
	waitLine(t, events, "slow started")
	interrupts <- os.Interrupt
	waitLine(t, events, "slow cancelled")
	waitOut("cancelled; the conversation goes on without this turn")

	fmt.Fprintln(typed, "Are you there?")
	waitOut("Still here.")
	// Ctrl-C at the prompt, until chat quits: the first may still find
	// the last line running (its end and the send race), and cancel
	// nothing, and the next, within a second, quits; else one arms (it
	// says so), and the next quits.
	code := -1
	for i := 0; code < 0; i++ {
		if i == 10 {
			t.Fatalf("chat did not quit after %d Ctrl-Cs; output:\n%s", i, out.String())
		}
		select {
		case interrupts <- os.Interrupt:
		case code = <-done:
		}
	}
	if code != exitOK {
		t.Errorf("exit %d; output:\n%s", code, out.String())
	}
	// runChat gives Ctrl-C back before it returns.
	select {
	case byInterrupt := <-released:
		if !byInterrupt {
			t.Error("Ctrl-C was given back as if chat had ended without one")
		}
	default:
		t.Error("chat ended without giving Ctrl-C back")
	}
	if reqs := srv.Requests(); len(reqs) != 4 {
		t.Errorf("%d model requests, want 4", len(reqs))
	}
}

// TestChatSIGINT runs the binary: a real SIGINT during a slow tool call
// cancels the turn (the server records it) and the process goes on.
func TestChatSIGINT(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_slow", Name: "mcp_call", Arguments: `{"tool":"mcp__demo__slow","arguments":{"ms":60000}}`}}},
		openaitest.Turn{Content: "Still here."},
	)
	file, events := chatComposition(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(t, ctx, "chat", "-c", file)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr mcptest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitFor := func(what string) {
		t.Helper()
		for line := range lines {
			if strings.Contains(line, what) {
				return
			}
		}
		t.Fatalf("the output ended before %q; stderr:\n%s", what, stderr.String())
	}
	waitFor("chatting with")
	fmt.Fprintln(stdin, "Sleep a minute.")
	waitLine(t, events, "slow started")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitLine(t, events, "slow cancelled")
	waitFor("cancelled")
	fmt.Fprintln(stdin, "Are you there?")
	waitFor("Still here.")
	stdin.Close()
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v; stderr:\n%s", err, stderr.String())
	}
}

// waitLine waits (bounded) for the fixture's event file to hold line.
func waitLine(t *testing.T, path, line string) {
	t.Helper()
	mcptest.WaitFor(t, 60*time.Second, "line "+line+" in "+path, func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains("\n"+string(b), "\n"+line+"\n")
	})
}

// TestChatPrintGivesCtrlCBack: after a turn of chat -p that a Ctrl-C
// cancelled, chat stops taking Ctrl-C before the host shuts down (the
// process's default then ends a shutdown that hangs); one that ended on its
// own says so too.
func TestChatPrintGivesCtrlCBack(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_slow", Name: "mcp_call", Arguments: `{"tool":"mcp__demo__slow","arguments":{"ms":60000}}`}}},
		openaitest.Turn{Content: "Done."},
	)
	file, events := chatComposition(t, srv)
	t.Setenv("DSH_HOME", t.TempDir())
	run := func(interrupts chan os.Signal) (code int, released []bool) {
		var out mcptest.SyncBuffer
		code = runChat(context.Background(), []string{"-c", file, "-p", "hi"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &out},
			interrupts, func(byInterrupt bool) { released = append(released, byInterrupt) })
		return code, released
	}
	interrupts := make(chan os.Signal)
	type ran struct {
		code     int
		released []bool
	}
	done := make(chan ran, 1)
	go func() {
		code, released := run(interrupts)
		done <- ran{code, released}
	}()
	waitLine(t, events, "slow started")
	interrupts <- os.Interrupt
	if r := <-done; r.code != exitFail || len(r.released) != 1 || !r.released[0] {
		t.Errorf("cancelled: exit %d, released %v; want 1, [true]", r.code, r.released)
	}
	if code, released := run(make(chan os.Signal)); code != exitOK || len(released) != 1 || released[0] {
		t.Errorf("answered: exit %d, released %v; want 0, [false]", code, released)
	}
}
