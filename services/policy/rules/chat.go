package rules

import (
	"slices"

	"github.com/dsh-host/dsh-host/services/tools"
)

// ChatRule names the built-in rule for chat's model in a decision: chat
// asks before a call that may change something, as Claude Code and Codex
// do, unless the composition's rules say otherwise for chat.
const ChatRule = "chat's default (built in: ask before a tool not marked readOnlyHint; a rule with callers: [chat] replaces it)"

// ChatDefault reports whether the built-in chat rule holds for rs: it
// does until a rule for tools names the caller kind chat. A rule written
// for other callers, or for every caller (an allow for the gateway's
// clients, an audit-only policy entry), or for chat's resources or
// prompts alone, leaves it on: nothing turns chat's safety off but a
// rule that was written for chat's tool calls.
func ChatDefault(rs []Rule) bool {
	return !slices.ContainsFunc(rs, func(r Rule) bool {
		return slices.Contains(r.Callers, tools.CallerChat) && r.covers(tools.KindTools)
	})
}

// safeForChat reports whether a call of def needs no approval under the
// chat rule: a tool marked readOnlyHint (by its MCP server's listing or,
// for a tool of no server, its Definition), or one that only dispatches
// to other tools through the pipeline (mcp_call), whose calls each meet
// the rules themselves.
func safeForChat(def tools.Definition) bool {
	if def.Dispatches {
		return true
	}
	if ann := readAnnotations(def.MCPTool); ann != nil {
		return ann.value("readOnlyHint")
	}
	return def.Annotations != nil && def.Annotations.ReadOnlyHint
}

// rank orders actions by how much they hold back.
func rank(action string) int {
	switch action {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2 // deny, and anything unknown: fail closed
}

// withChat applies the chat rule to d, the rules' decision for call: the
// stricter of the two decides, so that the composition's allow rules for
// every caller do not silently lift chat's ask, while its deny and ask
// rules keep their own names.
func (set *ruleSet) withChat(call tools.Call, safe bool, d Decision) Decision {
	if !set.chat || call.Caller.Kind != tools.CallerChat || safe || rank(d.Action) >= rank(Ask) {
		return d
	}
	return Decision{Action: Ask, Rule: ChatRule}
}
