package mcpfold

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

// waitingLogins are the overview's lines for servers that wait for a
// login: they have no tools, so no heading in the tree; they come from the
// logins service, by name (one may have no id yet), with the hint.
func (a *adapter) waitingLogins(v view) []string {
	if a.logins == nil {
		return nil
	}
	var lines []string
	for _, o := range a.logins.List() {
		why := o.Pending()
		if why == "" {
			continue
		}
		mark := ""
		if id := v.gate.idOf(o.Server); v.ids && id != 0 {
			mark = fmt.Sprintf("[%d] ", id)
		}
		lines = append(lines, fmt.Sprintf("%s%s — %s — or: /mcp login %s", mark, o.Server, why, o.Server))
	}
	return lines
}

// serverArg resolves an id or a serverName to the serverName.
func (a *adapter) serverArg(arg string) (string, *commands.Reply) {
	if !idArg.MatchString(arg) {
		return arg, nil
	}
	id, err := strconv.Atoi(arg)
	n, ok := a.gate.Load().nameOf(id)
	if err != nil || !ok {
		return "", &commands.Reply{Text: fmt.Sprintf("no MCP server carries id %d — run \"/mcp\" for the ids, or give the serverName", id), Error: true}
	}
	return n, nil
}

// trust approves what the server named by arg (an id or a serverName)
// changed or added since its tools were trusted. The pins are the policy
// service's: its /policy trust does it, reached through the commands
// service so that the fold does not restart with every policy edit.
// The policy command runs with /mcp's caller and back-channels.
func (a *adapter) trust(ctx context.Context, inv commands.Invocation, arg string) commands.Reply {
	name, bad := a.serverArg(arg)
	if bad != nil {
		return *bad
	}
	if a.cmds == nil || !slices.ContainsFunc(a.cmds.List(), func(c commands.Command) bool { return c.Name == "policy" }) {
		return commands.Reply{Text: "/mcp trust needs the policy service, and this host has none", Error: true}
	}
	return a.cmds.RunWith(ctx, inv.Caller, "/policy trust "+name, inv.Channels)
}

// login runs the OAuth login of the server named by arg, an id or a
// serverName (a server that needs a login may have no id yet): the login
// its mcp-client instance offers on the logins service, as `dsh-host
// login` runs it, with the authorization URL in the reply (and at once on
// the front end's stream where it allowed the browser step). The instance
// then connects by itself from the stored token.
func (a *adapter) login(ctx context.Context, caller tools.Caller, arg string) commands.Reply {
	name, bad := a.serverArg(arg)
	if bad != nil {
		return *bad
	}
	if a.logins == nil {
		return commands.Reply{Text: "/mcp login needs the logins service, and this host has none", Error: true}
	}
	offer, ok := a.logins.Get(name)
	if !ok {
		for _, g := range a.groups(a.mcpTools(caller)) {
			if g.server == name {
				return commands.Reply{Text: fmt.Sprintf("server %q has no OAuth login: it runs over stdio or sends a configured Authorization header", name), Error: true}
			}
		}
		return commands.Reply{Text: fmt.Sprintf("no running MCP server is named %q — run \"/mcp\" for the servers", name), Error: true}
	}
	var out lockedBuffer
	status, err := offer.Login(ctx, &out)
	shown := strings.TrimSpace(out.String())
	if err != nil {
		return commands.Reply{Text: strings.TrimSpace(shown + "\n/mcp login " + name + ": " + err.Error()), Error: true}
	}
	return commands.Reply{Text: strings.TrimSpace(shown + "\n" + fmt.Sprintf("%s: %s — it connects with the new token by itself", name, status))}
}

// lockedBuffer collects what the login shows (the authorization URL),
// written by whichever goroutine of the login runs the browser step.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
