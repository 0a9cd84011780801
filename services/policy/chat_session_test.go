package policy_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/plugins/agent"
	"github.com/dsh-host/dsh-host/services/elicit"
)

// sessionAnswerer approves every ask for the session and counts the asks.
type sessionAnswerer struct {
	mu    sync.Mutex
	asked int
}

func (s *sessionAnswerer) Answer(_ context.Context, req elicit.Request) (elicit.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Approval != nil {
		s.asked++
	}
	return elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: elicit.ApproveSession}}, nil
}

func (s *sessionAnswerer) take() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.asked
	s.asked = 0
	return n
}

// TestChatSessionApprovalIsTheConversations: "session" approves the tool
// for the chat conversation it was given in: the same conversation is not
// asked again; another conversation of the same agent (another front
// end's), and this one after /new, are.
func TestChatSessionApprovalIsTheConversations(t *testing.T) {
	logCall := func(id string) openaitest.Turn {
		return openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: id, Name: "mcp_call", Arguments: `{"tool":"mcp__fx__log","arguments":{"text":"hi"}}`}}}
	}
	done := openaitest.Turn{Content: "done"}
	srv := openaitest.New(t, logCall("c1"), done, logCall("c2"), done, logCall("c3"), done, logCall("c4"), done)
	h := hosttest.Start(t, annotatedComposition(mcptest.FixtureBinary(t), fmt.Sprintf(`  - id: agent
    name: agent
    config:
      baseUrl: %s
      apiKeyEnv: ""
`, srv.URL)))
	a, ok := host.Lookup(h.Host, agent.Key)
	if !ok {
		t.Fatal("no agent")
	}
	ans := &sessionAnswerer{}
	turn := func(c *agent.Conversation) int {
		t.Helper()
		if _, err := c.Turn(t.Context(), "log hi", agent.Output{Answerer: ans}); err != nil {
			t.Fatalf("turn: %v", err)
		}
		return ans.take()
	}
	main := a.Main()
	if n := turn(main); n != 1 {
		t.Fatalf("the first call was asked %d times, want once", n)
	}
	if n := turn(main); n != 0 {
		t.Errorf("the same conversation was asked again (%d times) after a session approval", n)
	}
	if n := turn(a.NewConversation()); n != 1 {
		t.Errorf("another conversation was asked %d times, want once: a session approval is one conversation's", n)
	}
	main.Reset()
	if n := turn(main); n != 1 {
		t.Errorf("after /new the conversation was asked %d times, want once", n)
	}
}
