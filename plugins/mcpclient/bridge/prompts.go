package bridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// listPrompts drains prompts/list, up to maxListed prompts (cut is told
// when it cuts). A prompt listed twice keeps its first entry.
func listPrompts(ctx context.Context, s *mcp.ClientSession, cut func(method string)) ([]*mcp.Prompt, error) {
	var list []*mcp.Prompt
	seen := map[string]bool{}
	err := paginate("prompts/list", func(cursor string) (string, error) {
		res, err := s.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, p := range res.Prompts {
			if p == nil || seen[p.Name] {
				continue
			}
			if len(list) == maxListed {
				cut("prompts/list")
				return "", nil
			}
			seen[p.Name] = true
			list = append(list, p)
		}
		return res.NextCursor, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list prompts: %w", err)
	}
	return list, nil
}

// PublicPromptName is the slash command a server's prompt becomes, without
// the slash: named like the server's tools (toolset.PublicName), so
// mcp__<serverName>__<prompt> when that is a valid name.
func PublicPromptName(serverName, prompt string) string {
	return toolset.PublicName(serverName, prompt)
}

// publishPrompts makes list the server's prompts: slash commands with the
// commands service, entries of the resources service (which the gateway
// serves) with that one. Both come from this one listing.
func (b *Bridge) publishPrompts(list []*mcp.Prompt) {
	if b.opt.Commands != nil {
		b.swapPrompts(list)
	}
	if b.source != nil {
		ps := make([]resources.Prompt, 0, len(list))
		for _, p := range list {
			ps = append(ps, resources.Prompt{Public: PublicPromptName(b.opt.Server, p.Name), Prompt: *p})
		}
		b.source.SetPrompts(ps)
	}
}

// swapPrompts replaces the registered prompt commands with list. An
// unchanged list keeps them. A name already taken (by another plugin's
// command) skips that prompt with an error in the log; the others register.
func (b *Bridge) swapPrompts(list []*mcp.Prompt) {
	sig, err := json.Marshal(list)
	if err != nil {
		sig = nil
	}
	if sig != nil && string(sig) == b.promptSig {
		return
	}
	for i := len(b.prompts) - 1; i >= 0; i-- {
		b.prompts[i]()
	}
	b.prompts = nil
	b.promptSig = string(sig)
	for _, p := range list {
		remove, err := b.opt.Commands.Register(b.opt.Scope, b.promptCommand(p))
		if err != nil {
			b.opt.Log.Error(b.opt.Label+": prompt not offered as a command", "prompt", p.Name, "err", err)
			continue
		}
		b.prompts = append(b.prompts, remove)
	}
}

// promptCommand is the slash command of one prompt (resources.PromptCommand:
// the same rules as a plugin's own prompt).
func (b *Bridge) promptCommand(p *mcp.Prompt) commands.Command {
	return resources.PromptCommand{
		Prompt:   resources.Prompt{Server: b.opt.Server, Public: PublicPromptName(b.opt.Server, p.Name), Prompt: *p},
		Get:      b.GetPrompt,
		Complete: b.Complete,
		Renderer: resources.Renderer{Store: b.opt.Store},
	}.Command()
}

// GetPrompt gets the server's prompt name with args (prompts/get).
func (b *Bridge) GetPrompt(ctx context.Context, name string, args map[string]string, ch *tools.Channels) (*mcp.GetPromptResult, error) {
	cn, done, err := b.link.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	gctx, cancel := context.WithTimeout(requestContext(ctx, ch), b.opt.RequestTimeout)
	res, err := cn.Session().GetPrompt(gctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	b.link.Release(cancel, err)
	if err != nil {
		return nil, b.requestError(ctx, gctx, cn, "prompt "+name, err)
	}
	return res, nil
}
