package chatui

// The console's conversation of its own on the host (app.ChatInfo's
// handle): its turns, /sessions, /resume and the agent's commands (/new,
// /compact, /context, /cost) name it, so that another front end on the
// same host talks in another. A handle the host no longer keeps (it
// dropped the least recently used) is answered by starting a new
// conversation, said on the console, and sending the request again.

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
)

// conversation is the console's handle now.
func (f *chatFront) conversation() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conv
}

func (f *chatFront) setConversation(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conv = id
}

// renew starts a new conversation in place of one the host dropped, and
// says so; false when none could start (said too).
func (f *chatFront) renew(ctx context.Context) bool {
	info, err := f.app.ChatSession(ctx, app.ChatSessionRequest{})
	if err != nil {
		fmt.Fprintf(f.out, "error: %v\n", err)
		return false
	}
	f.setConversation(info.Conversation)
	fmt.Fprintln(f.out, "the host no longer keeps this conversation (it keeps the ones used last); a new conversation starts")
	return true
}

// chat runs req in the console's conversation, in a new one when the
// host dropped it.
func (f *chatFront) chat(ctx context.Context, req app.ChatRequest) (app.ChatResult, error) {
	req.Conversation = f.conversation()
	res, err := f.app.Chat(ctx, req)
	if errors.Is(err, app.ErrNoConversation) && f.renew(ctx) {
		req.Conversation = f.conversation()
		res, err = f.app.Chat(ctx, req)
	}
	return res, err
}

// conversationApp is the App the chat console runs its commands on: a
// command names the console's conversation, for the agent's to act on.
type conversationApp struct {
	app.App
	f *chatFront
}

func (c conversationApp) Command(ctx context.Context, req app.CommandRequest) (commands.Reply, error) {
	req.Conversation = c.f.conversation()
	r, err := c.App.Command(ctx, req)
	if errors.Is(err, app.ErrNoConversation) && c.f.renew(ctx) {
		req.Conversation = c.f.conversation()
		r, err = c.App.Command(ctx, req)
	}
	return r, err
}

// InstallAnswerer installs a on a host in this process (app.Installer),
// as the console does on the App it is given; on a running host's socket
// there is nothing to install.
func (c conversationApp) InstallAnswerer(a elicit.Answerer) (remove func()) {
	if in, ok := c.App.(app.Installer); ok {
		return in.InstallAnswerer(a)
	}
	return func() {}
}
