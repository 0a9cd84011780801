package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
)

// registerCost registers /cost: what the conversation has used and cost.
func registerCost(s *host.Scope, cmds *commands.Registry, a *Agent) error {
	_, err := cmds.Register(s, commands.Command{
		Name:        "cost",
		Description: "the conversation's tokens and cost so far, and the model's price now",
		Handler: commands.Func(func(ctx context.Context, _ string) (string, error) {
			return a.costReportOf(a.conversationIn(ctx)), nil
		}),
	})
	return err
}

// costReport is /cost's answer for the main conversation.
func (a *Agent) costReport() string { return a.costReportOf(a.main) }

// costReportOf is /cost's answer for conv.
func (a *Agent) costReportOf(conv *Conversation) string {
	u := conv.Spent()
	var b strings.Builder
	fmt.Fprintf(&b, "this conversation: %d prompt tokens (%d cached), %d completion tokens, %d ms waiting for the API\n",
		u.Prompt, u.CachedPrompt, u.Completion, u.APIMillis)
	model := a.Model()
	p, ok := a.cfg.pricingOf(model)
	switch {
	case u.Priced:
		fmt.Fprintf(&b, "cost: %s (US dollars, at the price of the hour each request was sent)\n", Dollars(u.Cost))
	case u != Usage{}:
		fmt.Fprintf(&b, "cost: not known: a request went to a model without a price (set price.MODEL in the agent's entry)\n")
	}
	if !ok {
		fmt.Fprintf(&b, "%s has no price here: set price.%s (input, cachedInput, output per million tokens) in the agent's entry to see costs", model, model)
		return b.String()
	}
	now := p.at(a.now())
	fmt.Fprintf(&b, "%s now: $%g input, $%g cached input, $%g output per million tokens", model, now.Input, now.CachedInput, now.Output)
	if len(p.windows) > 0 {
		if now == p.peak {
			fmt.Fprintf(&b, " (peak hours; %g× off-peak)", p.offPeak)
		} else {
			b.WriteString(" (off-peak)")
		}
	}
	return b.String()
}
