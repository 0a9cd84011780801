package chatui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/plugins/agent"
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
			if !errors.Is(err, agent.ErrCut) {
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
