package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/toolset"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// promptCommand is the slash command of one prompt.
func (b *Bridge) promptCommand(p *mcp.Prompt) commands.Command {
	name := PublicPromptName(b.opt.Server, p.Name)
	desc := p.Description
	if desc == "" {
		desc = p.Title
	}
	return commands.Command{
		Name:        name,
		Description: fmt.Sprintf("MCP prompt %q of %s: %s", p.Name, b.opt.Server, resources.OneLine(desc)),
		Usage:       promptUsage(p),
		Handler: func(ctx context.Context, inv commands.Invocation) commands.Reply {
			text, err := b.runPrompt(ctx, inv.Caller, p, name, inv.Input)
			if err != nil {
				return commands.Reply{Text: err.Error(), Error: true}
			}
			return commands.Reply{Text: text}
		},
		Complete: func(ctx context.Context, input string) ([]string, error) {
			return b.completePrompt(ctx, p, input)
		},
	}
}

// promptUsage shows the arguments in declared order, optional ones in
// brackets.
func promptUsage(p *mcp.Prompt) string {
	var parts []string
	for _, a := range p.Arguments {
		if a == nil {
			continue
		}
		if a.Required {
			parts = append(parts, a.Name+"=…")
		} else {
			parts = append(parts, "["+a.Name+"=…]")
		}
	}
	return strings.Join(parts, " ")
}

// promptArgs assigns the words of a command's input to p's arguments:
// name=value for a declared name, any other word to the next argument not
// given yet, in declared order.
func promptArgs(p *mcp.Prompt, words []string) (map[string]string, error) {
	names := make([]string, 0, len(p.Arguments))
	for _, a := range p.Arguments {
		if a != nil {
			names = append(names, a.Name)
		}
	}
	out := map[string]string{}
	var positional []string
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok && slices.Contains(names, k) {
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("argument %s given twice", k)
			}
			out[k] = v
			continue
		}
		positional = append(positional, w)
	}
	next := 0
	for _, w := range positional {
		for next < len(names) {
			if _, given := out[names[next]]; !given {
				break
			}
			next++
		}
		if next == len(names) {
			if len(names) == 0 {
				return nil, fmt.Errorf("the prompt takes no arguments; got %q", w)
			}
			return nil, fmt.Errorf("too many arguments: %q is left over (arguments: %s)", w, strings.Join(names, ", "))
		}
		out[names[next]] = w
	}
	return out, nil
}

// runPrompt gets the prompt with the arguments of input and renders its
// messages as text.
func (b *Bridge) runPrompt(ctx context.Context, caller tools.Caller, p *mcp.Prompt, name, input string) (string, error) {
	words, err := commands.SplitArgs(input)
	if err != nil {
		return "", err
	}
	args, err := promptArgs(p, words)
	if err != nil {
		return "", fmt.Errorf("%w — usage: /%s %s", err, name, promptUsage(p))
	}
	var missing []string
	for _, a := range p.Arguments {
		if a != nil && a.Required && args[a.Name] == "" {
			missing = append(missing, describeArg(a))
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("missing required argument(s): %s — usage: /%s %s", strings.Join(missing, "; "), name, promptUsage(p))
	}
	res, err := b.GetPrompt(ctx, p.Name, args)
	if err != nil {
		return "", err
	}
	return b.RenderMessages(ctx, caller, res), nil
}

// GetPrompt gets the server's prompt name with args (prompts/get).
func (b *Bridge) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	cn, done, err := b.link.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	gctx, cancel := context.WithTimeout(ctx, b.opt.RequestTimeout)
	res, err := cn.Session().GetPrompt(gctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	b.link.Release(cancel, err)
	if err != nil {
		return nil, b.requestError(ctx, gctx, cn, "prompt "+name, err)
	}
	return res, nil
}

func describeArg(a *mcp.PromptArgument) string {
	if a.Description != "" {
		return a.Name + " (" + resources.OneLine(a.Description) + ")"
	}
	return a.Name
}

// RenderMessages renders a prompt's messages for a person: each message
// under its role, text as it is, images and audio kept in the attachment
// store and named by reference, embedded resources with their URI.
func (b *Bridge) RenderMessages(ctx context.Context, caller tools.Caller, res *mcp.GetPromptResult) string {
	var out strings.Builder
	if res.Description != "" {
		fmt.Fprintf(&out, "%s\n\n", res.Description)
	}
	rd := resources.Renderer{Store: b.opt.Media.Store}
	for i, m := range res.Messages {
		if m == nil {
			continue
		}
		if i > 0 {
			out.WriteString("\n\n")
		}
		fmt.Fprintf(&out, "[%s]\n", m.Role)
		out.WriteString(b.renderPromptContent(ctx, caller, rd, m.Content))
	}
	return out.String()
}

func (b *Bridge) renderPromptContent(ctx context.Context, caller tools.Caller, rd resources.Renderer, content mcp.Content) string {
	switch x := content.(type) {
	case *mcp.TextContent:
		return x.Text
	case *mcp.ImageContent:
		return b.opt.Media.KeepMedia(ctx, "image", x.MIMEType, x.Data)
	case *mcp.AudioContent:
		return b.opt.Media.KeepMedia(ctx, "audio", x.MIMEType, x.Data)
	case *mcp.EmbeddedResource:
		if x.Resource == nil {
			return "[embedded resource without contents]"
		}
		// A person reads the reply: images are kept as references
		// whatever the caller takes.
		caller.ImageInput = true
		return resources.ContentText(rd.Contents(ctx, caller, []*mcp.ResourceContents{x.Resource}))
	case *mcp.ResourceLink:
		return fmt.Sprintf("Resource link: %s (%s)", x.Name, x.URI)
	case nil:
		return ""
	}
	return fmt.Sprintf("[unsupported prompt content %T]", content)
}

// completePrompt completes the last word of a prompt command's input: a
// name=value word's value, else the next positional argument's value (and
// the names of arguments not given yet that start with the word).
func (b *Bridge) completePrompt(ctx context.Context, p *mcp.Prompt, input string) ([]string, error) {
	before, last := commands.LastWord(input)
	given, err := promptArgs(p, before)
	if err != nil {
		return nil, err
	}
	var arg, prefix string
	var out []string
	if k, v, ok := strings.Cut(last, "="); ok && slices.ContainsFunc(p.Arguments, func(a *mcp.PromptArgument) bool { return a != nil && a.Name == k }) {
		arg, prefix = k, k+"="
		last = v
	} else {
		for _, a := range p.Arguments {
			if a == nil {
				continue
			}
			if _, done := given[a.Name]; done {
				continue
			}
			if arg == "" {
				arg = a.Name
			}
			if last != "" && strings.HasPrefix(a.Name, last) {
				out = append(out, a.Name+"=")
			}
		}
	}
	if arg == "" {
		return out, nil
	}
	values, err := b.Complete(ctx, resources.CompleteRequest{
		Ref:      mcp.CompleteReference{Type: "ref/prompt", Name: p.Name},
		Argument: arg, Value: last, Context: given,
	})
	if err != nil {
		if len(out) > 0 {
			return out, nil
		}
		return nil, err
	}
	for _, v := range values {
		out = append(out, prefix+v)
	}
	return out, nil
}
