package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// askChat is askComposition with an agent on srv; the model's key is read
// from CHAT_TEST_KEY.
func askChat(t *testing.T, srv *openaitest.Server) string {
	t.Helper()
	t.Setenv("CHAT_TEST_KEY", "sk-chat-test")
	t.Setenv("DSH_HOME", t.TempDir())
	return writeComposition(t, askComposition(t, fmt.Sprintf(`  - id: agent
    name: agent
    config:
      baseUrl: %s
      apiKeyEnv: CHAT_TEST_KEY
`, srv.URL)))
}

// countTurns: the model counts through mcp_call, then says what it got.
func countTurns(answer string) []openaitest.Turn {
	return []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "mcp_call", Arguments: `{"tool":"mcp__fx__count","arguments":{}}`}}},
		{Content: answer},
	}
}

// toolResult is the text of the tool message request i carried.
func toolResult(t *testing.T, srv *openaitest.Server, i int) string {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) <= i {
		t.Fatalf("%d model requests, want more than %d", len(reqs), i)
	}
	msgs, err := reqs[i].Messages()
	if err != nil {
		t.Fatal(err)
	}
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].Role == "tool" {
			return msgs[j].Text()
		}
	}
	t.Fatalf("request %d carries no tool message: %s", i, reqs[i].Body)
	return ""
}

// TestChatApprovalsByFedLines: with stdin not a terminal, the lines a
// script fed ahead answer the approvals in order (a terminal's type-ahead
// is dropped instead): y approves the first call, n denies the second.
func TestChatApprovalsByFedLines(t *testing.T) {
	srv := openaitest.New(t, append(countTurns("Counted."), countTurns("Refused.")...)...)
	file := askChat(t, srv)
	var out strings.Builder
	in := strings.NewReader("Count once.\ny\nCount again.\nn\n")
	code := runChat(context.Background(), []string{"-c", file}, Stdio{In: in, Out: &out, Err: &out}, make(chan os.Signal), func(bool) {})
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	const ask = "Allow mcp__fx__count {}? [y]es once / [s]ession / [a]lways / [n]o: "
	if n := strings.Count(out.String(), ask+"y\n") + strings.Count(out.String(), ask+"n\n"); n != 2 {
		t.Errorf("asked %d times, want 2:\n%s", n, out.String())
	}
	if got := toolResult(t, srv, 1); got != "1" {
		t.Errorf("the approved call's result = %q, want the count 1; output:\n%s", got, out.String())
	}
	if got := toolResult(t, srv, 3); !strings.Contains(got, "not approved") {
		t.Errorf("the denied call's result = %q, want the denial; output:\n%s", got, out.String())
	}
}

// TestChatPrintApproval: under -p nobody can answer: a call the policy
// asks about is denied, naming --yes, and runs with --yes.
func TestChatPrintApproval(t *testing.T) {
	srv := openaitest.New(t, countTurns("Refused.")...)
	file := askChat(t, srv)
	code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "Count.")
	if code != exitOK || stdout != "Refused.\n" {
		t.Fatalf("without --yes: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	if got := toolResult(t, srv, 1); !strings.Contains(got, "pass --yes to allow it") {
		t.Errorf("without --yes the model read %q, want the denial naming --yes", got)
	}
	srv.Push(countTurns("Counted.")...)
	code, stdout, stderr = dshHost(t, "chat", "-c", file, "-p", "Count.", "--yes")
	if code != exitOK || stdout != "Counted.\n" {
		t.Fatalf("--yes: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	if got := toolResult(t, srv, 3); got != "1" {
		t.Errorf("with --yes the model read %q, want the count 1", got)
	}
}
