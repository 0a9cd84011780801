package chatui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/services/tools"

	// What the test compositions run, as the binary builds them in.
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/plugins/mcpoutput"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	_ "github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/elicit"
	_ "github.com/dsh-host/dsh-host/services/logins"
	_ "github.com/dsh-host/dsh-host/services/policy"
	_ "github.com/dsh-host/dsh-host/services/resources"
	_ "github.com/dsh-host/dsh-host/services/settings"
	_ "github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) {
	sandbox.Main() // this binary launches the sandboxed stdio servers
	leaks.VerifyTestMain(m)
}

// chatComposition is the fixture server (folded) and an agent on srv whose
// key is read from CHAT_TEST_KEY.
func chatComposition(t *testing.T, srv *openaitest.Server) string {
	t.Helper()
	t.Setenv("CHAT_TEST_KEY", "sk-chat-test")
	return fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
      args: [-progress]
  - id: fold
    name: mcp-fold
  # These tests drive the model's calls; chat's built-in ask before a
  # writing tool is tested in services/policy.
  - id: policy
    name: policy
    config:
      rules: [{callers: [chat], action: allow}]
  - id: agent
    name: agent
    config:
      baseUrl: %s
      apiKeyEnv: CHAT_TEST_KEY
      # Not DeepSeek's API: no price unless given. A flat one (no peak
      # hours) keeps the goldens' costs the same at every hour.
      price:
        deepseek-flash: {input: 300, cachedInput: 30, output: 1200}
`, mcptest.FixtureBinary(t), srv.URL)
}

// flowComposition is the fixture with its progress and elicitation tools.
func flowComposition(t *testing.T) string {
	return fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
      args: [-progress, -elicit]
`, mcptest.FixtureBinary(t))
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

// startChat starts text's host and prepares its chat on std, as the
// command does with a composition file.
func startChat(t *testing.T, text string, std console.Stdio) (*Chat, *app.Local) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	h := hosttest.Start(t, text)
	c, err := host.ReadComposition(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := New(c, file, Resume{}, std)
	if err != nil {
		t.Fatal(err)
	}
	return ch, &app.Local{Host: h.Host, File: file}
}

// TestPipedInputLeavesASilentPipe: a pipe that stays open and silent (a
// parent process that never writes nor closes its child's stdin) does not
// hold a prompt given as an argument; one that writes is read to its end,
// and, the prompt being stdin, a silent one is waited for.
func TestPipedInputLeavesASilentPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	text, waited, err := PipedInput(r, 20*time.Millisecond)
	w.Close() // ends the read left waiting
	if text != "" || !waited || err != nil {
		t.Errorf("a silent pipe: %q, waited %v, %v; want it left alone", text, waited, err)
	}

	r, w, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		io.WriteString(w, "first ")
		io.WriteString(w, "second\n")
		w.Close()
	}()
	text, waited, err = PipedInput(r, 0)
	if text != "first second\n" || waited || err != nil {
		t.Errorf("a pipe that writes: %q, waited %v, %v", text, waited, err)
	}
}

// TestChatClearsItsLineForAQuestion: a server's question erases chat's
// live progress line (the console's hook), before it is printed.
func TestChatClearsItsLineForAQuestion(t *testing.T) {
	var term bytes.Buffer
	live := newLiveProgress(&term, &term)
	live.report()("mcp_call", tools.Progress{Progress: 1, Total: 3})
	live.clear()
	if got := term.String(); !strings.HasSuffix(got, "\r\x1b[K") || !strings.Contains(got, "mcp_call: 1/3") {
		t.Errorf("the line is not erased: %q", got)
	}

	h := hosttest.Start(t, flowComposition(t)).Host
	in, typed := io.Pipe()
	var out mcptest.SyncBuffer
	done := make(chan struct{})
	hooks := console.Hooks{Clear: func() { out.Write([]byte("<chat's line erased>")) }}
	go func() {
		defer close(done)
		console.Run(context.Background(), &app.Local{Host: h}, in, &out, nil, hooks)
	}()
	defer func() { typed.Close(); <-done }()
	fmt.Fprintln(typed, "/call mcp__demo__ask")
	mcptest.WaitFor(t, 30*time.Second, "the question", func() bool { return strings.Contains(out.String(), " asks: ") })
	fmt.Fprintln(typed, "/decline")
	typed.Close()
	<-done
	got := out.String()
	if i := strings.Index(got, "<chat's line erased>"); i < 0 || i > strings.Index(got, "demo asks:") {
		t.Errorf("chat's line is not erased before the question:\n%s", got)
	}
}

// TestChatSaysTheAgentRestarted: a turn after the agent's instance
// restarted (its entry changed) says the conversation is new.
func TestChatSaysTheAgentRestarted(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "one"}, openaitest.Turn{Content: "two"}, openaitest.Turn{Content: "three"})
	text := chatComposition(t, srv)
	h := hosttest.Start(t, text)
	var out mcptest.SyncBuffer
	f := &chatFront{app: &app.Local{Host: h.Host}, out: &out}
	f.turn(context.Background(), "first")
	f.turn(context.Background(), "second")
	if strings.Contains(out.String(), "restarted") {
		t.Fatalf("a restart without one:\n%s", out.String())
	}
	h.Apply(text + "      system: Be brief.\n")
	f.turn(context.Background(), "third")
	if got := out.String(); !strings.Contains(got, "two\nagent restarted; new conversation\nthree") {
		t.Errorf("output:\n%s", got)
	}
}
