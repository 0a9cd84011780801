package chatui

// MCP prompts in chat: /mcp__server__prompt ARGS inserts the prompt's
// messages in the conversation as turns (the model answers the last
// user message) instead of printing them as the console does.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/agent"
)

// promptTurn runs the console line "/name rest" as a prompt's turn when
// name is an MCP prompt, and says whether it was one.
func (f *chatFront) promptTurn(ctx context.Context, name, rest string) bool {
	public := strings.TrimPrefix(name, "/")
	a, ok := host.Lookup(f.h, agent.Key)
	if !ok || !a.IsPrompt(public) {
		return false
	}
	if f.agent != nil && a != f.agent {
		fmt.Fprintln(f.out, "agent restarted; new conversation")
	}
	f.agent = a
	if a.Main().Session() == nil {
		if err := f.sessions.start(a.Main(), a.Model()); err != nil {
			fmt.Fprintf(f.out, "%v; this conversation is not saved\n", err)
		}
	}
	res, err := a.Main().Prompt(ctx, public, rest, agent.Output{Text: f.out, Reasoning: f.reasoning, Status: f.out, Progress: f.progress, OneShot: f.oneShot})
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(f.out, "cancelled; the turn is dropped from the conversation")
	case err != nil:
		fmt.Fprintf(f.out, "error: %v\n", err)
	case res.Steps == 0 && res.Usage == (agent.Usage{}):
		// The prompt ended with the assistant's message: nothing was sent.
		fmt.Fprintf(f.out, "inserted the prompt %s; the conversation goes on from its last message\n", public)
	}
	showUsage(f.out, app.ChatUsage(res.Usage))
	return true
}

// chatSend runs one -p turn: a prompt line "/mcp__server__prompt ARGS"
// inserts that prompt as promptTurn does; anything else is a message.
func chatSend(ctx context.Context, a *agent.Agent, conv *agent.Conversation, prompt string, out agent.Output) (agent.Result, error) {
	if line, ok := strings.CutPrefix(strings.TrimSpace(prompt), "/"); ok {
		name, rest, _ := strings.Cut(line, " ")
		if a.IsPrompt(name) {
			return conv.Prompt(ctx, name, strings.TrimSpace(rest), out)
		}
	}
	return conv.Turn(ctx, prompt, out)
}
