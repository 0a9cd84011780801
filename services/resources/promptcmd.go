package resources

import (
	"cmp"
	"context"
	"fmt"
	"mime"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

// PromptCommand makes a prompt a slash command, /<Prompt.Public>, for a
// plugin that offers prompts of its own as mcp-client offers a server's:
// the words after the name fill the prompt's arguments (name=value for a
// declared argument, any other word the next one not given yet, in
// declared order), a missing required argument or a name=value of an
// undeclared name is refused with the usage,
// and the messages Get returns are rendered as text for a person.
//
//	p := resources.Prompt{Public: s.ID() + "_meet", Prompt: mcp.Prompt{Name: "meet", Arguments: args}}
//	_, err := cmds.Register(s, resources.PromptCommand{Prompt: p, Get: get}.Command())
type PromptCommand struct {
	// Prompt is the prompt; Public names the command, and Server, when
	// set, says in its description whose it is.
	Prompt Prompt
	// Get gets the prompt (by its own name, Prompt.Name) with the
	// arguments and the caller's back-channels: a Provider's GetPrompt
	// serves here as it is.
	Get func(ctx context.Context, name string, args map[string]string, ch *tools.Channels) (*mcp.GetPromptResult, error)
	// Complete, when set, suggests an argument's values (a Provider's
	// Complete); names of arguments not given yet are suggested anyway.
	Complete func(ctx context.Context, req CompleteRequest) ([]string, error)
	// Renderer keeps the messages' images and other binary content; its
	// zero value describes them without keeping them.
	Renderer Renderer
}

// Command returns the slash command.
func (pc PromptCommand) Command() commands.Command {
	p := pc.Prompt
	desc := fmt.Sprintf("prompt %q", p.Name)
	if p.Server != "" {
		desc += " of " + p.Server
	}
	if text := cmp.Or(p.Description, p.Title); text != "" {
		desc += ": " + OneLine(text)
	}
	return commands.Command{
		Name:        p.Public,
		Description: desc,
		Usage:       pc.usage(),
		Handler: func(ctx context.Context, inv commands.Invocation) commands.Reply {
			// The server's questions while it gets the prompt reach the
			// command's caller.
			text, err := pc.run(ctx, inv.Input, inv.Channels)
			if err != nil {
				return commands.Reply{Text: err.Error(), Error: true}
			}
			return commands.Reply{Text: text}
		},
		Complete: pc.complete,
	}
}

// names are the prompt's argument names, in declared order.
func (pc PromptCommand) names() []string {
	var out []string
	for _, a := range pc.Prompt.Arguments {
		if a != nil {
			out = append(out, a.Name)
		}
	}
	return out
}

// usage shows the arguments in declared order, optional ones in brackets.
func (pc PromptCommand) usage() string {
	var parts []string
	for _, a := range pc.Prompt.Arguments {
		switch {
		case a == nil:
		case a.Required:
			parts = append(parts, a.Name+"=…")
		default:
			parts = append(parts, "["+a.Name+"=…]")
		}
	}
	return strings.Join(parts, " ")
}

// args assigns words to the prompt's arguments.
func (pc PromptCommand) args(words []string) (map[string]string, error) {
	names := pc.names()
	out := map[string]string{}
	var rest []string
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || !slices.Contains(names, k) {
			if ok && looksLikeName(k) {
				// A mistyped name would otherwise fill the next argument
				// with "name=value" as its value.
				if len(names) == 0 {
					return nil, fmt.Errorf("unknown argument %s: the prompt takes no arguments", k)
				}
				return nil, fmt.Errorf("unknown argument %s (arguments: %s; a value holding '=' goes after its argument's name: %s=…)", k, strings.Join(names, ", "), names[0])
			}
			rest = append(rest, w)
			continue
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("argument %s given twice", k)
		}
		out[k] = v
	}
	next := 0
	for _, w := range rest {
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

// looksLikeName reports whether the part of a word before its '=' reads as
// an argument's name: letters, digits, '_', '-' or '.', not starting with a
// digit. A value such as "a+b=c" or "=x" stays a positional word.
func looksLikeName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}

func (pc PromptCommand) run(ctx context.Context, input string, ch *tools.Channels) (string, error) {
	res, err := pc.Fetch(ctx, input, ch)
	if err != nil {
		return "", err
	}
	return pc.Renderer.Messages(ctx, res), nil
}

// Fetch gets the prompt with the arguments the command's input gives, as
// the command does, and returns its messages unrendered (a chat inserts
// them as turns); ch are the caller's back-channels, as Get's.
func (pc PromptCommand) Fetch(ctx context.Context, input string, ch *tools.Channels) (*mcp.GetPromptResult, error) {
	words, err := commands.SplitArgs(input)
	if err != nil {
		return nil, err
	}
	args, err := pc.args(words)
	if err != nil {
		return nil, fmt.Errorf("%w — usage: /%s %s", err, pc.Prompt.Public, pc.usage())
	}
	var missing []string
	for _, a := range pc.Prompt.Arguments {
		if a != nil && a.Required && args[a.Name] == "" {
			name := a.Name
			if a.Description != "" {
				name += " (" + OneLine(a.Description) + ")"
			}
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing required argument(s): %s — usage: /%s %s", strings.Join(missing, "; "), pc.Prompt.Public, pc.usage())
	}
	return pc.Get(ctx, pc.Prompt.Name, args, ch)
}

// complete completes the last word of the input: a name=value word's
// value, else the next argument's value, and the names of the arguments
// not given yet that start with the word.
func (pc PromptCommand) complete(ctx context.Context, input string) ([]string, error) {
	before, last := commands.LastWord(input)
	given, err := pc.args(before)
	if err != nil {
		return nil, err
	}
	var arg, prefix string
	var out []string
	if k, v, ok := strings.Cut(last, "="); ok && slices.Contains(pc.names(), k) {
		arg, prefix, last = k, k+"=", v
	} else {
		for _, name := range pc.names() {
			if _, done := given[name]; done {
				continue
			}
			if arg == "" {
				arg = name
			}
			if last != "" && strings.HasPrefix(name, last) {
				out = append(out, name+"=")
			}
		}
	}
	if arg == "" || pc.Complete == nil {
		return out, nil
	}
	values, err := pc.Complete(ctx, CompleteRequest{
		Ref:      mcp.CompleteReference{Type: "ref/prompt", Name: pc.Prompt.Name},
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

// Messages renders a prompt's messages for a person: each under its role,
// text as it is, images and audio kept in the store and named by
// reference, embedded resources as a read shows them.
func (r Renderer) Messages(ctx context.Context, res *mcp.GetPromptResult) string {
	var b strings.Builder
	if res.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", res.Description)
	}
	for i, m := range res.Messages {
		if m == nil {
			continue
		}
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%s]\n", m.Role)
		b.WriteString(r.message(ctx, m.Content))
	}
	return b.String()
}

// MessageText renders one content block of a prompt's message as text,
// as Messages does: images and audio kept in the store and named by
// reference, embedded resources as a read shows them.
func (r Renderer) MessageText(ctx context.Context, content mcp.Content) string {
	return r.message(ctx, content)
}

func (r Renderer) message(ctx context.Context, content mcp.Content) string {
	switch x := content.(type) {
	case *mcp.TextContent:
		return x.Text
	case *mcp.ImageContent:
		return r.media(ctx, "image", x.MIMEType, x.Data)
	case *mcp.AudioContent:
		return r.media(ctx, "audio", x.MIMEType, x.Data)
	case *mcp.EmbeddedResource:
		if x.Resource == nil {
			return "[embedded resource without contents]"
		}
		// A person reads it: images are kept as references.
		return ContentText(r.Contents(ctx, tools.Caller{ImageInput: true}, []*mcp.ResourceContents{x.Resource}))
	case *mcp.ResourceLink:
		return fmt.Sprintf("Resource link: %s (%s)", x.Name, x.URI)
	case nil:
		return ""
	}
	return fmt.Sprintf("[unsupported prompt content %T]", content)
}

// media keeps an image (downscaled to fit the store, if need be) or other
// binary content of a message and names it.
func (r Renderer) media(ctx context.Context, kind, mimeType string, data []byte) string {
	if r.Store == nil {
		return fmt.Sprintf("[%s: %s, %d bytes; not kept: no attachment store is mounted]", kind, mimeType, len(data))
	}
	if mt, _, _ := mime.ParseMediaType(mimeType); kind == "image" && imageTypes[strings.ToLower(mt)] {
		if fitted, err := r.Store.SaveFitted(ctx, []attachments.Image{{MediaType: strings.ToLower(mt), Data: data}}); err == nil {
			text := ContentText([]tools.Content{{Type: "image", Image: &fitted[0].Ref}})
			if rs := fitted[0].Resized; rs != nil {
				text = rs.Note() + "\n" + text
			}
			return text
		}
	}
	ref, err := r.Store.SaveBlob(ctx, attachments.Blob{MediaType: mimeType, Data: data})
	if err != nil {
		return fmt.Sprintf("[%s: %s, %d bytes; not kept: %v]", kind, mimeType, len(data), err)
	}
	return fmt.Sprintf("[%s %s %s, %d bytes]", kind, ref.ID, mimeType, ref.Bytes)
}
