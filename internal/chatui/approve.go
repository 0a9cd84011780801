package chatui

// Approvals in chat: a call the policy marks `ask` is put to the person at
// the console (consoleAsker.approve, with the policy's choices); under -p
// nobody is there, so --yes decides.

import "github.com/dsh-host/dsh-host/services/tools"

// Approving returns the one-shot answer a chat turn's tool calls carry
// (tools.Channels.OneShot). Under -p (once) an ask is allowed with --yes
// and denied, naming --yes, without: the model reads the denial. In the
// console a person answers each ask (nil), unless --yes approved them all
// beforehand.
func Approving(once, yes bool) *tools.OneShot {
	if once || yes {
		return &tools.OneShot{Yes: yes}
	}
	return nil
}
