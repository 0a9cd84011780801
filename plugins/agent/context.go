package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
)

// ContextUse is what the next request of a conversation would spend of
// the model's context, in tokens. System + Tools + History + Request is
// Total: each part's share of the estimate is its share of the request's
// bytes.
type ContextUse struct {
	Window, Threshold int
	// Total is the estimate of the request's prompt tokens: the last
	// request's count (Measured) plus a token per 4 bytes since, else a
	// token per 4 bytes.
	Total    int
	Measured bool
	// System is the system message (the entry's text and the servers'
	// instructions), Tools the tools array, History the conversation's
	// messages, Request the rest of the body (model, options, framing).
	System, Tools, History, Request int
	Messages                        int
	Bytes                           int
	// Instructions are the AGENTS.md and CLAUDE.md files the system text
	// carries.
	Instructions []InstructionFile
}

// Context measures what the conversation's next request would spend.
func (c *Conversation) Context(ctx context.Context) (ContextUse, error) {
	history, _ := c.snapshot()
	history = dropAnsweredImages(history)
	req, err := c.a.prepare(ctx, history, &c.enc)
	if err != nil {
		return ContextUse{}, err
	}
	sys := 0
	if req.system != "" {
		b, _ := json.Marshal(openai.SystemMessage(req.system))
		sys = len(b) + 1 // and its comma
	}
	tools := 0
	if req.toolsJSON != nil {
		tools = len(`,"tools":`) + len(req.toolsJSON)
	}
	hist := 0
	for _, m := range history {
		b, _ := json.Marshal(m)
		hist += len(b) + 1
	}
	n := len(req.body)
	c.mu.Lock()
	measured := c.lastPrompt > 0
	c.mu.Unlock()
	u := ContextUse{Window: c.a.window(), Threshold: c.a.threshold(), Total: c.estimate(n), Measured: measured, Messages: len(history), Bytes: n,
		Instructions: c.a.work.Files}
	share := func(b int) int { return int(int64(u.Total) * int64(b) / int64(max(n, 1))) }
	u.System, u.Tools, u.Request = share(sys), share(tools), share(max(n-sys-tools-hist, 0))
	// The rounding goes to the history, so that the parts add up.
	u.History = u.Total - u.System - u.Tools - u.Request
	return u, nil
}

// String is the /context report.
func (u ContextUse) String() string {
	var b strings.Builder
	pct := func(n int) string { return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(max(u.Window, 1))) }
	fmt.Fprintf(&b, "context: %d of %d tokens (%s); compaction at %d (%s)\n", u.Total, u.Window, pct(u.Total), u.Threshold, pct(u.Threshold))
	fmt.Fprintf(&b, "  system text  %7d\n", u.System)
	for _, f := range u.Instructions {
		switch {
		case f.Left:
			fmt.Fprintf(&b, "    %s: left out (past %d bytes of instructions)\n", f.Path, maxInstructions)
		case f.Cut > 0:
			fmt.Fprintf(&b, "    %s: %d bytes, cut (%d more)\n", f.Path, f.Bytes, f.Cut)
		default:
			fmt.Fprintf(&b, "    %s: %d bytes\n", f.Path, f.Bytes)
		}
	}
	fmt.Fprintf(&b, "  tools        %7d\n", u.Tools)
	fmt.Fprintf(&b, "  history      %7d  (%d messages)\n", u.History, u.Messages)
	fmt.Fprintf(&b, "  request      %7d  (model, options)\n", u.Request)
	fmt.Fprintf(&b, "  total        %7d", u.Total)
	if u.Measured {
		fmt.Fprintf(&b, "  (the last request's count, and 4 bytes a token since; %d bytes)", u.Bytes)
	} else {
		fmt.Fprintf(&b, "  (4 bytes a token of %d bytes: no request counted yet)", u.Bytes)
	}
	return b.String()
}

// registerContextCommands registers /context and /compact, which act on
// the front end's conversation (WithConversation), else the main one.
func registerContextCommands(s *host.Scope, cmds *commands.Registry, a *Agent) error {
	if _, err := cmds.Register(s, commands.Command{
		Name:        "context",
		Description: "show what the next request spends of the model's context: system text, tools, history",
		Handler: commands.Func(func(ctx context.Context, _ string) (string, error) {
			u, err := a.conversationIn(ctx).Context(ctx)
			if err != nil {
				return "", err
			}
			return u.String(), nil
		}),
	}); err != nil {
		return err
	}
	_, err := cmds.Register(s, commands.Command{
		Name:        "compact",
		Description: "summarise the conversation's earlier turns into one message, to free context",
		Handler: commands.Func(func(ctx context.Context, _ string) (string, error) {
			conv := a.conversationIn(ctx)
			before, err := conv.Context(ctx)
			if err != nil {
				return "", err
			}
			n, _, err := conv.Compact(ctx, Output{})
			if err != nil {
				return "", err
			}
			after, err := conv.Context(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("compacted: %d messages summarised; context %d → %d tokens", n, before.Total, after.Total), nil
		}),
	})
	return err
}
