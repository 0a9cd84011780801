package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
)

// TestFailedTurnKeepsTheMessage: a turn the API refuses, and one the
// person cancels, leave the conversation as it was but keep the person's
// line: Pending offers it again, and the session saves it as unanswered,
// with why, outside the history. A session of failed turns alone is not
// the one --continue picks; once a turn is answered it is, and nothing is
// pending.
func TestFailedTurnKeepsTheMessage(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Status: 400, ErrorBody: `{"error":{"message":"bad request","type":"invalid_request_error"}}`},
		openaitest.Turn{Content: "held", Hold: true},
		openaitest.Turn{Content: "Answered."},
	)
	e := start(t, srv, "")
	dir := t.TempDir()
	s, err := sessions.New(dir, "/c.yml", e.agent.Model())
	if err != nil {
		t.Fatal(err)
	}
	conv := e.agent.Main()
	conv.Record(s)
	var o output
	if _, err := conv.Turn(context.Background(), "Keep me.", o.out()); err == nil {
		t.Fatal("the refused turn did not fail")
	}
	if conv.Pending() != "Keep me." || conv.Len() != 0 {
		t.Fatalf("after the refusal: pending %q, %d messages", conv.Pending(), conv.Len())
	}
	ctx, cancel := context.WithCancel(context.Background())
	arrived := srv.Arrived()
	go func() { <-arrived; cancel() }()
	if _, err := conv.Turn(ctx, "Hold on.", o.out()); err == nil {
		t.Fatal("the cancelled turn did not fail")
	}
	if conv.Pending() != "Hold on." || conv.Len() != 0 {
		t.Fatalf("after the cancel: pending %q, %d messages", conv.Pending(), conv.Len())
	}
	ls, err := sessions.Open(dir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Info.Turns != 0 || ls.Info.Unanswered != 2 || len(ls.History) != 0 || ls.Pending != "Hold on." || ls.Info.FirstLine != "Keep me." {
		t.Fatalf("saved: %+v, %d history messages, pending %q", ls.Info, len(ls.History), ls.Pending)
	}
	if tr := ls.Transcript; len(tr) != 2 || !tr[0].Unanswered || !strings.Contains(tr[0].Error, "400") || tr[1].Text != "Hold on." || tr[1].Error != "cancelled" {
		t.Fatalf("transcript: %+v", tr)
	}
	if last, _ := sessions.Last(dir, "/c.yml"); last != "" {
		t.Errorf("--continue picks %q, a session without a turn", last)
	}

	res, err := conv.Turn(context.Background(), "Now answer.", o.out())
	if err != nil || res.Answer != "Answered." || conv.Pending() != "" {
		t.Fatalf("answered turn: %+v %v, pending %q", res, err, conv.Pending())
	}
	// The answered turn went without the unanswered ones.
	if msgs := messages(t, srv, len(srv.Requests())-1); len(msgs) != 2 || msgs[1].Text() != "Now answer." {
		t.Errorf("the next request's messages: %d, last %q", len(msgs), msgs[len(msgs)-1].Text())
	}
	ls, err = sessions.Open(dir, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Info.Turns != 1 || ls.Pending != "" || len(ls.History) != 2 || len(ls.Transcript) != 4 {
		t.Errorf("saved: %+v, %d history messages, pending %q, transcript %+v", ls.Info, len(ls.History), ls.Pending, ls.Transcript)
	}
	if last, _ := sessions.Last(dir, "/c.yml"); last != s.ID {
		t.Errorf("--continue picks %q, want %s", last, s.ID)
	}
}
