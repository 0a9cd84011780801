package chatui

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
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
