package policy_test

import (
	"context"
	"slices"
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestCallHasNoSession: `call` with someone answering is not offered
// "for this session", as the console does not offer it: every `call` to
// a host is the same caller, so a session approval would hold for each
// later one, a one-shot `call` without --yes included, since saved
// approvals are looked at before the one-shot's answer.
func TestCallHasNoSession(t *testing.T) {
	fixture := mcptest.FixtureBinary(t)
	h := hosttest.Start(t, counterComposition(fixture, `        - tools: ["mcp__fx__count"]
          action: ask
`))
	reg := h.Tools()
	var offered [][]string
	answer := elicit.AnswerFunc(func(_ context.Context, req elicit.Request) (elicit.Result, error) {
		offered = append(offered, req.Approval.Choices)
		// A hostile or careless front end answers session whatever it was offered.
		return elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: elicit.ApproveSession}}, nil
	})
	caller := tools.Caller{Kind: tools.CallerCall}
	reg.Run(t.Context(), tools.Call{Caller: caller, Name: "mcp__fx__count", Args: []byte("{}"), Channels: &tools.Channels{Answerer: answer}})
	if len(offered) != 1 || slices.Contains(offered[0], elicit.ApproveSession) {
		t.Errorf("call's choices: %v; want one ask, without session", offered)
	}
	res := reg.Run(t.Context(), tools.Call{Caller: caller, Name: "mcp__fx__count", Args: []byte("{}"), Channels: &tools.Channels{OneShot: &tools.OneShot{}}})
	if res.Err == nil {
		t.Errorf("a later one-shot call without --yes ran: an earlier call's approval held for it")
	}
}
