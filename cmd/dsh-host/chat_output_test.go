package main

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// chatPiped runs chat with stdin fed from input (a pipe, as from git diff).
func chatPiped(t *testing.T, input string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(t, ctx, append([]string{"chat"}, args...)...)
	cmd.Stdin = strings.NewReader(input)
	return runToEnd(t, cmd)
}

type scriptResult struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	IsError   bool   `json:"is_error"`
	Result    string `json:"result"`
	SessionID string `json:"session_id"`
	NumTurns  int    `json:"num_turns"`
	Usage     struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	ToolCalls []struct {
		ID, Name, Result string
		Input            map[string]any
		IsError          bool `json:"is_error"`
	} `json:"tool_calls"`
}

// checkResult checks the result of chatTurns: the answer, a session, the
// usage and the one call with its outcome.
func checkResult(t *testing.T, r scriptResult) {
	t.Helper()
	if r.Type != "result" || r.Subtype != "success" || r.IsError || r.Result != "The sum is 3." || r.NumTurns != 2 {
		t.Errorf("result = %+v", r)
	}
	if r.SessionID == "" {
		t.Error("no session_id")
	}
	if r.Usage.InputTokens != 50 || r.Usage.OutputTokens != 4 {
		t.Errorf("usage = %+v, want 50 in, 4 out", r.Usage)
	}
	if len(r.ToolCalls) != 1 {
		t.Fatalf("tool_calls = %+v, want the one call", r.ToolCalls)
	}
	c := r.ToolCalls[0]
	if c.ID != "call_1" || c.Name != "mcp_call" || c.Input["tool"] != "mcp__demo__add" || c.Result != "3" || c.IsError {
		t.Errorf("tool call = %+v", c)
	}
}

func TestChatPrintJSON(t *testing.T) {
	srv := openaitest.New(t, chatTurns()...)
	file, _ := chatComposition(t, srv)
	code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "What is 1+2?", "--output-format", "json")
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var r scriptResult
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&r); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, stdout)
	}
	checkResult(t, r)
}

func TestChatPrintStreamJSON(t *testing.T) {
	srv := openaitest.New(t, chatTurns()...)
	file, _ := chatComposition(t, srv)
	code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "What is 1+2?", "--output-format", "stream-json")
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	type event struct {
		Type, Subtype string
		SessionID     string `json:"session_id"`
		Message       struct {
			Role    string
			Content []struct {
				Type, ID, Name, Text string
				ToolUseID            string `json:"tool_use_id"`
				Content              string
				Input                map[string]any
			}
		}
	}
	var events []event
	var last string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a line is not JSON (%v): %s", err, sc.Text())
		}
		events, last = append(events, e), sc.Text()
	}
	var kinds []string
	for _, e := range events {
		k := e.Type
		if e.Subtype != "" {
			k += "/" + e.Subtype
		}
		for _, c := range e.Message.Content {
			k += "/" + c.Type
		}
		kinds = append(kinds, k)
	}
	// The first step's reasoning comes first, as a thinking block.
	want := "system/init assistant/thinking/tool_use user/tool_result assistant/text result/success"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("events %s, want %s:\n%s", got, want, stdout)
	}
	id := events[0].SessionID
	if !strings.Contains(stdout, `"tools":["mcp_call","mcp_list","mcp_read_output"]`) {
		t.Errorf("the init event does not name the model's tools:\n%s", stdout)
	}
	for i, e := range events {
		if e.SessionID == "" || e.SessionID != id {
			t.Errorf("event %d has session_id %q, the init said %q", i, e.SessionID, id)
		}
	}
	use, res := events[1].Message.Content[1], events[2].Message.Content[0]
	if use.ID != "call_1" || use.Name != "mcp_call" || use.Input["tool"] != "mcp__demo__add" {
		t.Errorf("tool_use = %+v", use)
	}
	if res.ToolUseID != "call_1" || res.Content != "3" {
		t.Errorf("tool_result = %+v", res)
	}
	var r scriptResult
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
}

// TestChatPrintStdin: what is piped into chat -p follows the prompt in the
// user's message; -p without a prompt takes stdin alone.
func TestChatPrintStdin(t *testing.T) {
	const diff = "diff --git a/x b/x\n-old\n+new\n"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"after the prompt", []string{"-p", "review this"}, "review this\n\n" + diff},
		{"as the prompt", []string{"-p"}, diff},
		{"as the prompt, flags after -p", []string{"-p", "--output-format", "json"}, diff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(t, openaitest.Turn{Content: "Looks fine."})
			file, _ := chatComposition(t, srv)
			code, stdout, stderr := chatPiped(t, diff, append([]string{"-c", file}, tt.args...)...)
			if code != exitOK || !strings.Contains(stdout, "Looks fine.") {
				t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			msgs, err := reqs[0].Messages()
			if err != nil {
				t.Fatal(err)
			}
			if got := msgs[len(msgs)-1]; got.Role != "user" || got.Text() != tt.want {
				t.Errorf("the user's message = %s %q, want %q", got.Role, got.Text(), tt.want)
			}
		})
	}
	t.Run("nothing piped and no prompt", func(t *testing.T) {
		code, _, stderr := chatPiped(t, "", "-p")
		if code != exitUsage || !strings.Contains(stderr, "-p needs a prompt") {
			t.Errorf("exit %d; stderr:\n%s", code, stderr)
		}
	})
}

// TestChatPrintJSONError: a failed turn is still one object, with
// is_error and the error, and exit 1.
func TestChatPrintJSONError(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Status: 401})
	file, _ := chatComposition(t, srv)
	code, stdout, stderr := dshHost(t, "chat", "-c", file, "-p", "hi", "--output-format", "json")
	var r struct {
		IsError   bool   `json:"is_error"`
		Subtype   string `json:"subtype"`
		Error     string `json:"error"`
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON object (%v): %q; stderr:\n%s", err, stdout, stderr)
	}
	if code != exitFail || !r.IsError || r.Subtype != "error_during_execution" || !strings.Contains(r.Error, "CHAT_TEST_KEY") || r.SessionID == "" {
		t.Errorf("exit %d, %+v", code, r)
	}
}
