package app

// Each chat front end talks in a conversation of its own: ChatSession
// hands it a handle (ChatInfo.Conversation) that its later requests name,
// so that a second front end on the same host neither resets the first
// one's conversation nor shares its history, its /new, /compact, /cost or
// its "session" approvals (each agent.Conversation is a caller of its
// own). An empty handle is the agent's main conversation, as before.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/dsh-host/dsh-host/plugins/agent"
)

// maxConversations bounds the conversations a host keeps for its front
// ends: past it the one used least recently is dropped, so that front
// ends that come and go (each chat -p is one) do not grow the host.
const maxConversations = 32

// ErrNoConversation: a request named a conversation the host does not
// keep (never handed out, or dropped as the least recently used).
var ErrNoConversation = fmt.Errorf("the host keeps no such conversation (it keeps the %d used last, none from before it started): start a new one", maxConversations)

// conversations are the handed-out conversations, by handle. Guarded by
// Local.chatMu.
type conversations struct {
	byID map[string]*handle
	tick uint64 // the last use's count
}

// handle is one handed-out conversation.
type handle struct {
	conv *agent.Conversation
	// agent is conv's: a request on another one (a reload restarted
	// it) starts the handle anew. Each handle compares its own, not all
	// of them against the last agent seen: a request that looked the
	// agent up just before a reload would drop the conversations of the
	// front ends already on the new one.
	agent *agent.Agent
	used  uint64
	// restarted: conv replaced one dropped by a restart, which the
	// handle's next turn has yet to say (ChatResult.Restarted).
	restarted bool
}

// newConversation hands out a new empty conversation of a, dropping the
// least recently used one past the bound.
func (l *Local) newConversation(a *agent.Agent) (string, *agent.Conversation) {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	id := hex.EncodeToString(b[:])
	l.chatMu.Lock()
	defer l.chatMu.Unlock()
	cs := &l.convs
	if cs.byID == nil {
		cs.byID = map[string]*handle{}
	}
	for len(cs.byID) >= maxConversations {
		oldest := ""
		for k, h := range cs.byID {
			if oldest == "" || h.used < cs.byID[oldest].used {
				oldest = k
			}
		}
		delete(cs.byID, oldest)
	}
	cs.tick++
	conv := a.NewConversation()
	cs.byID[id] = &handle{conv: conv, agent: a, used: cs.tick}
	return id, conv
}

// dropConversation forgets the handle id (a session that failed to start
// in it: nothing was handed out).
func (l *Local) dropConversation(id string) {
	l.chatMu.Lock()
	defer l.chatMu.Unlock()
	delete(l.convs.byID, id)
}

// conversation is the conversation id names on a: the main one for "",
// else the handed-out one (ErrNoConversation when it is not kept). A
// handle whose conversation a restart of the agent dropped gets a new
// one; restarted says so once, to the first turn or session (starting
// anew anyway) that takes it: take.
func (l *Local) conversation(a *agent.Agent, id string, take bool) (conv *agent.Conversation, restarted bool, err error) {
	if id == "" {
		if take {
			restarted = l.lastAgent(a)
		}
		return a.Main(), restarted, nil
	}
	l.chatMu.Lock()
	defer l.chatMu.Unlock()
	cs := &l.convs
	h := cs.byID[id]
	if h == nil {
		return nil, false, ErrNoConversation
	}
	cs.tick++
	h.used = cs.tick
	if h.agent != a {
		h.conv, h.agent, h.restarted = a.NewConversation(), a, true
	}
	if take {
		restarted, h.restarted = h.restarted, false
	}
	return h.conv, restarted, nil
}

// commandContext is ctx for a slash command of the conversation id: the
// agent's commands (/new, /compact, /context, /cost) act on it. Without
// an agent there is none to name, and nothing to act on.
func (l *Local) commandContext(ctx context.Context, id string) (context.Context, error) {
	if id == "" {
		return ctx, nil
	}
	a, err := l.agent()
	if err != nil {
		return ctx, nil
	}
	conv, _, err := l.conversation(a, id, false)
	if err != nil {
		return nil, err
	}
	return agent.WithConversation(ctx, conv), nil
}
