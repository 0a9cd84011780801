package chatui

// MCP prompts in chat: /mcp__server__prompt ARGS inserts the prompt's
// messages in the conversation as turns (the model answers the last
// user message) instead of printing them as the console does.

import (
	"context"
	"strings"
)

// promptTurn runs the console line "/name rest" as a prompt's turn when
// name is an MCP prompt, and says whether it was one.
func (f *chatFront) promptTurn(ctx context.Context, name, rest string) bool {
	return f.send(ctx, strings.TrimSpace(name+" "+rest), true)
}
