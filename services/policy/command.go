package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// command is /policy: the rules in force and the saved approvals, and
// `/policy forget TOOL` to remove an approval.
func (p *Policy) command(cfg Config) commands.Command {
	return commands.Command{
		Name:        "policy",
		Description: "the policy's rules, saved approvals and held tools; forget TOOL removes an approval; review SERVER [TOOL] shows what trust would approve; trust SERVER [TOOL] [--digest D] approves a changed or new tool; explain TOOL [ARGS] says which rule decides a call and why",
		Usage:       "[forget TOOL | review SERVER [TOOL] | trust SERVER [TOOL] [--digest D] | explain [--caller KIND] [--subject S] [--group G]... TOOL [ARGS]]",
		Handler: func(ctx context.Context, inv commands.Invocation) commands.Reply {
			verb, arg, _ := strings.Cut(inv.Input, " ")
			switch verb {
			case "":
				return commands.Reply{Text: p.describe()}
			case "forget":
				return p.forget(strings.TrimSpace(arg))
			case "trust":
				return p.trustCommand(strings.Fields(arg))
			case "review":
				return p.reviewCommand(strings.Fields(arg))
			case "explain":
				return p.explainCommand(arg)
			}
			return commands.Reply{Text: "usage: /policy [forget TOOL | review SERVER [TOOL] | trust SERVER [TOOL] [--digest D] | explain [--caller KIND] [--subject S] [--group G]... TOOL [ARGS]]", Error: true}
		},
	}
}

func (p *Policy) describe() string {
	var b strings.Builder
	b.WriteString(p.rules.Describe())
	if globs := p.approvals.always.Load(); globs != nil && len(*globs) > 0 {
		fmt.Fprintf(&b, "always approved (settings section %s.allow): %s\n", SettingsSection, strings.Join(*globs, ", "))
	}
	for _, h := range p.Held() {
		fmt.Fprintf(&b, "\n%s\n", h.Error())
	}
	return b.String()
}

func (p *Policy) forget(tool string) commands.Reply {
	st := p.approvals.settings
	if tool == "" || st == nil {
		return commands.Reply{Text: "usage: /policy forget TOOL (approvals are kept in the settings service, which must run)", Error: true}
	}
	found := false
	err := settings.Update(st, SettingsSection, func(v *Approvals) error {
		n := len(v.Allow)
		v.Allow = slices.DeleteFunc(v.Allow, func(s string) bool { return s == tool })
		found = len(v.Allow) < n
		return nil
	})
	if err != nil {
		return commands.Reply{Text: err.Error(), Error: true}
	}
	if !found {
		return commands.Reply{Text: fmt.Sprintf("%s has no saved approval", tool), Error: true}
	}
	if cur := p.approvals.always.Load(); cur != nil {
		p.SetAlways(slices.DeleteFunc(slices.Clone(*cur), func(s string) bool { return s == tool }))
	}
	return commands.Reply{Text: fmt.Sprintf("forgot the approval of %s: its calls are asked again", tool)}
}

// trustCommand is /policy trust SERVER [TOOL] [--digest D]: with a
// digest, only the definitions it names are approved.
func (p *Policy) trustCommand(args []string) commands.Reply {
	digest := ""
	if i := slices.Index(args, "--digest"); i >= 0 && i == len(args)-2 {
		digest = args[i+1]
		args = args[:i]
	}
	if len(args) == 0 || len(args) > 2 || slices.Contains(args, "--digest") {
		return commands.Reply{Text: "usage: /policy trust SERVER [TOOL] [--digest D]", Error: true}
	}
	tool := ""
	if len(args) == 2 {
		tool = args[1]
	}
	if digest == "" {
		// Approve what this command showed, not what the server offers
		// when it is run again (it may have changed in between).
		r, err := p.Review(args[0], tool)
		if err != nil {
			return commands.Reply{Text: "trust: " + err.Error(), Error: true}
		}
		if r.Pending() {
			again := "/policy trust " + strings.Join(args, " ")
			if shown := p.pins.TakeShown(again); shown != r.Digest {
				p.pins.SetShown(again, r.Digest)
				text := r.Text()
				if shown != "" {
					text = "what was shown before changed since; nothing was approved. Now:\n" + text
				}
				return commands.Reply{Text: text + "or run " + again + " again to approve exactly this\n"}
			}
			digest = r.Digest
		} else {
			// Nothing to approve: recording the definitions now could
			// approve a change that came after the review.
			return commands.Reply{Text: fmt.Sprintf("nothing of %s was held; its current definitions are trusted", args[0])}
		}
	}
	released, err := p.TrustDigest(args[0], tool, digest)
	if err != nil {
		return commands.Reply{Text: "trust: " + err.Error(), Error: true}
	}
	if len(released) == 0 {
		return commands.Reply{Text: fmt.Sprintf("nothing of %s was held; its current definitions are trusted", args[0])}
	}
	return commands.Reply{Text: "trusted and offered again: " + strings.Join(released, ", ")}
}

// reviewCommand is /policy review SERVER [TOOL]: Review's text.
func (p *Policy) reviewCommand(args []string) commands.Reply {
	if len(args) == 0 || len(args) > 2 {
		return commands.Reply{Text: "usage: /policy review SERVER [TOOL]", Error: true}
	}
	tool := ""
	if len(args) == 2 {
		tool = args[1]
	}
	r, err := p.Review(args[0], tool)
	if err != nil {
		return commands.Reply{Text: "review: " + err.Error(), Error: true}
	}
	if r.Pending() {
		// A /policy trust of the same tools that follows approves this.
		p.pins.SetShown("/policy trust "+strings.Join(args, " "), r.Digest)
	}
	return commands.Reply{Text: r.Text()}
}

// explainCommand is /policy explain [--caller KIND] [--subject S]
// [--group G]... TOOL [ARGS]: the arguments are the rest of the line, as
// written.
func (p *Policy) explainCommand(line string) commands.Reply {
	const usage = "usage: /policy explain [--caller KIND] [--subject S] [--group G]... TOOL [ARGS]"
	call := tools.Call{Caller: tools.Caller{Kind: tools.CallerCall}}
	rest := strings.TrimSpace(line)
	var id tools.Identity
	for strings.HasPrefix(rest, "--") {
		var flag, value string
		flag, rest, _ = strings.Cut(rest, " ")
		value, rest, _ = strings.Cut(strings.TrimSpace(rest), " ")
		rest = strings.TrimSpace(rest)
		if value == "" {
			return commands.Reply{Text: usage + "\n" + flag + " needs a value", Error: true}
		}
		switch flag {
		case "--caller":
			if !slices.Contains(rules.CallerKinds(), value) {
				return commands.Reply{Text: fmt.Sprintf("--caller %q: callers are %s", value, strings.Join(rules.CallerKinds(), ", ")), Error: true}
			}
			call.Caller.Kind = value
		case "--subject":
			id.Subject = value
		case "--group":
			id.Groups = append(id.Groups, value)
		default:
			return commands.Reply{Text: usage + "\nunknown flag " + flag, Error: true}
		}
	}
	if id.Subject != "" || id.Groups != nil {
		call.Caller.Identity = &id
	}
	call.Name, rest, _ = strings.Cut(rest, " ")
	if call.Name == "" {
		return commands.Reply{Text: usage, Error: true}
	}
	call.Args = []byte(strings.TrimSpace(rest))
	x := p.Explain(call)
	return commands.Reply{Text: fmt.Sprintf("caller %s%s\n%s", call.Caller.Kind, identityText(call.Caller.Identity), x)}
}

func identityText(id *tools.Identity) string {
	if id == nil {
		return ""
	}
	s := ""
	if id.Subject != "" {
		s += ", subject " + id.Subject
	}
	if len(id.Groups) > 0 {
		s += ", groups " + strings.Join(id.Groups, ",")
	}
	return s
}
