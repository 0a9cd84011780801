package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// chatMCPComposition is the fixture server with prompts, resources and the
// sample tool (folded), and an agent on srv.
func chatMCPComposition(t *testing.T, srv *openaitest.Server) string {
	t.Helper()
	t.Setenv("CHAT_TEST_KEY", "sk-chat-test")
	t.Setenv("DSH_HOME", t.TempDir())
	return writeComposition(t, fmt.Sprintf(`plugins:
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
      args: [-prompts, -resources, "1", -sample]
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
`, mcptest.FixtureBinary(t), srv.URL))
}

var sampleCall = openaitest.ToolCall{ID: "call_s", Name: "mcp_call", Arguments: `{"tool":"mcp__demo__sample","arguments":{"prompt":"Say pong"}}`}

// In the chat console, /mcp__demo__echo becomes the user's message the
// model answers (not a printed rendering), a mention attaches the
// resource, and a server's sampling request is asked, then answered by the
// model.
func TestChatConsolePromptMentionSampling(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "Echoed."},
		openaitest.Turn{Content: "Read."},
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{sampleCall}},
		openaitest.Turn{Content: "pong"},
		openaitest.Turn{Content: "Done."},
	)
	file := chatMCPComposition(t, srv)
	run := func(in io.Reader, out io.Writer) {
		runChat(context.Background(), []string{"-c", file}, Stdio{In: in, Out: out, Err: out}, make(chan os.Signal), func(bool) {})
	}
	const ask = "Allow the MCP server demo to ask the model (sampling, during mcp_call)"
	got := consoleScript(t, run,
		step{"chatting with", "/mcp__demo__echo text=hello times=2"},
		step{"Echoed.", "what is in @demo:fixture://doc/001 ?"},
		step{"Read.", "Sample it."},
		step{ask, "y"},
		step{"Done.", "/quit"},
	)
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5; output:\n%s", len(reqs), got)
	}
	last := func(i int) openaitest.Message {
		m, err := reqs[i].Messages()
		if err != nil {
			t.Fatal(err)
		}
		return m[len(m)-1]
	}
	if m := last(0); m.Role != "user" || m.Text() != "hellohello" {
		t.Errorf("the prompt's message = %s", m.Raw)
	}
	if strings.Contains(got, "[user]") {
		t.Errorf("the prompt was printed, not inserted:\n%s", got)
	}
	if m := last(1); !strings.Contains(m.Text(), "the text of fixture://doc/001") {
		t.Errorf("the mention's message = %s", m.Raw)
	}
	if m := last(3); m.Text() != "Say pong" || reqs[3].Field("tools") != nil {
		t.Errorf("the sampling request = %s", reqs[3].Body)
	}
	if m := last(4); m.Role != "tool" || !strings.Contains(m.Text(), "pong") {
		t.Errorf("the sample tool's result = %s", m.Raw)
	}
}

// chat -p declines a sampling request without --yes, naming the flag; with
// --yes the model answers it.
func TestChatPrintSamplingNeedsYes(t *testing.T) {
	for _, yes := range []bool{false, true} {
		t.Run(fmt.Sprint("yes=", yes), func(t *testing.T) {
			turns := []openaitest.Turn{{ToolCalls: []openaitest.ToolCall{sampleCall}}}
			if yes {
				turns = append(turns, openaitest.Turn{Content: "pong"})
			}
			srv := openaitest.New(t, append(turns, openaitest.Turn{Content: "Done."})...)
			file := chatMCPComposition(t, srv)
			args := []string{"chat", "-c", file, "-p", "Sample it."}
			if yes {
				args = append(args, "--yes")
			}
			code, stdout, stderr := dshHost(t, args...)
			if code != exitOK || stdout != "Done.\n" {
				t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
			}
			reqs := srv.Requests()
			m, _ := reqs[len(reqs)-1].Messages()
			tool := m[len(m)-1].Text()
			if yes && (len(reqs) != 3 || !strings.Contains(tool, "pong")) {
				t.Errorf("%d requests; the tool result %q", len(reqs), tool)
			}
			if !yes && (len(reqs) != 2 || !strings.Contains(tool, "pass --yes")) {
				t.Errorf("%d requests; the tool result %q, want the decline naming --yes", len(reqs), tool)
			}
		})
	}
}

// chat -p "/mcp__demo__echo ..." inserts the prompt as the message.
func TestChatPrintPrompt(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "Echoed."})
	file := chatMCPComposition(t, srv)
	code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "/mcp__demo__echo text=hey")
	if code != exitOK || stdout != "Echoed.\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	m, _ := srv.Requests()[0].Messages()
	if last := m[len(m)-1]; last.Text() != "hey" {
		t.Errorf("the message = %s", last.Raw)
	}
}
