package agent

import "context"

// conversationKey is the context key of the conversation a front end's
// slash command acts on.
type conversationKey struct{}

// WithConversation returns ctx saying that the agent's slash commands
// run in it (/new, /compact, /context, /cost) act on c: the front end's
// own conversation, not the main one another front end talks in.
func WithConversation(ctx context.Context, c *Conversation) context.Context {
	return context.WithValue(ctx, conversationKey{}, c)
}

// conversationIn is the conversation ctx names for a's commands: the
// one WithConversation put there when it is a's, else the main one.
func (a *Agent) conversationIn(ctx context.Context) *Conversation {
	if c, ok := ctx.Value(conversationKey{}).(*Conversation); ok && c != nil && c.a == a {
		return c
	}
	return a.main
}
