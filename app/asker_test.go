package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
)

// The test plugin app-test-asker registers /ask, a command that asks its
// caller one question and replies with the answer.
func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "app-test-asker",
		Inject: []host.Dep{host.Require(commands.Key), host.Require(elicit.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			questions := host.Get(s, elicit.Key)
			_, err := host.Get(s, commands.Key).Register(s, commands.Command{Name: "ask", Description: "ask the caller",
				Handler: func(ctx context.Context, inv commands.Invocation) commands.Reply {
					var first elicit.Answerer
					if inv.Channels != nil {
						first = inv.Channels.Answerer
					}
					res := questions.AskFor(ctx, first, elicit.Request{Mode: elicit.ModeURL, Message: "open it", URL: "https://example.com/" + inv.Input})
					return commands.Reply{Text: res.Action + " " + res.Reason}
				}})
			return err
		},
	})
}

// TestCommandQuestions: a command's question goes to the request's
// answerer, attached too; without one, its Elicit mode answers.
func TestCommandQuestions(t *testing.T) {
	both(t, "plugins:\n  - {id: asker, name: app-test-asker}\n", func(t *testing.T, e *env) {
		yes := &answerWith{res: elicit.Result{Action: elicit.Accept}}
		r, err := e.Command(t.Context(), app.CommandRequest{Line: "/ask page", Answer: yes})
		if err != nil || strings.TrimSpace(r.Text) != "accept" || yes.count() != 1 || yes.asks[0].URL != "https://example.com/page" {
			t.Errorf("asked: %+v, %v, %d questions", r, err, yes.count())
		}
		r, err = e.Command(t.Context(), app.CommandRequest{Line: "/ask page", Elicit: "decline"})
		if err != nil || !strings.HasPrefix(r.Text, "decline") {
			t.Errorf("declined: %+v, %v", r, err)
		}
	})
}
