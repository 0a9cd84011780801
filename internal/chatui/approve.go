package chatui

// Approvals in chat: a call the policy marks `ask` is put to the person at
// the console (consoleAsker.approve, with the policy's choices); under -p
// nobody is there, so --yes decides.

import (
	"context"

	"github.com/dsh-host/dsh-host/services/policy"
)

// Approving returns the context a chat turn's tool calls run under. Under
// -p (once) an ask is allowed with --yes and denied, naming --yes, without:
// the model reads the denial. In the console a person answers each ask,
// unless --yes approved them all beforehand.
func Approving(ctx context.Context, once, yes bool) context.Context {
	if once || yes {
		return policy.WithOneShot(ctx, yes)
	}
	return ctx
}
