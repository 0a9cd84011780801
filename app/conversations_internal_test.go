package app

import (
	"testing"

	"github.com/dsh-host/dsh-host/plugins/agent"
)

// TestStaleAgentLeavesOtherConversations: a request that looked the agent
// up just before a reload replaced it (a1) comes after another front end's
// request already on the new agent (a2): it resets its own conversation
// only. It used to drop every handle's conversation, so the front end
// talking to the live agent lost its history and was told of a restart
// that never touched it.
func TestStaleAgentLeavesOtherConversations(t *testing.T) {
	var l Local
	a1, a2 := &agent.Agent{}, &agent.Agent{}
	idA, _ := l.newConversation(a1)
	idB, convB := l.newConversation(a2)
	// A's request, with the agent it looked up before the reload.
	if _, _, err := l.conversation(a1, idA, true); err != nil {
		t.Fatal(err)
	}
	l.newConversation(a1)
	conv, restarted, err := l.conversation(a2, idB, true)
	if err != nil {
		t.Fatal(err)
	}
	if conv != convB || restarted {
		t.Errorf("B's conversation on the live agent: replaced %v, restarted %v; want it kept", conv != convB, restarted)
	}
	// A, now on the live agent, starts anew and is told so once.
	convA, restarted, err := l.conversation(a2, idA, true)
	if err != nil || !restarted {
		t.Fatalf("A on the new agent: restarted %v, %v; want restarted", restarted, err)
	}
	if again, restarted, _ := l.conversation(a2, idA, true); again != convA || restarted {
		t.Errorf("A's next request: replaced %v, restarted %v; want the same conversation, no news", again != convA, restarted)
	}
}
