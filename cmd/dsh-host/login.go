package main

// login and logout: the OAuth login of a remote MCP server, kept in the
// token store under $DSH_HOME/oauth, where every dsh-host process (a run,
// a serve) finds it.

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/services/logins"
)

func cmdLogin(ctx context.Context, args []string, std Stdio) int {
	fs := flagSet("login", "<serverName> [-c FILE] [flags]", `
Logs in to the remote MCP server the composition names serverName, in the
browser: the authorization URL is opened with $BROWSER (the URL as its last
argument) or the platform's opener, and printed. The token is stored under
$DSH_HOME/oauth; a run or serve that waits for this login connects by itself.`)
	var cf commonFlags
	cf.register(fs, "warn")
	timeout := fs.Duration("timeout", logins.DefaultLoginTimeout, "how long to wait for the login in the browser")
	name, code, ok := serverArg(fs, args, std)
	if !ok {
		return code
	}
	out := std.display()
	status, err := (&app.Local{File: cf.file}).Login(ctx, app.LoginRequest{Server: name, Browser: &logins.BrowserStep{Out: out.Err, Open: std.OpenURL, Timeout: *timeout}})
	if err != nil {
		return fail(std, "login", hostrun.ExplainLoadError(cf.file, err))
	}
	fmt.Fprintf(out.Out, "%s: %s\n", name, status)
	return exitOK
}

func cmdLogout(ctx context.Context, args []string, std Stdio) int {
	fs := flagSet("logout", "<serverName> [-c FILE] [flags]", `
Deletes the stored login of the remote MCP server the composition names
serverName, and revokes its tokens where the authorization server offers
revocation.`)
	var cf commonFlags
	cf.register(fs, "warn")
	name, code, ok := serverArg(fs, args, std)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	msg, err := (&app.Local{File: cf.file}).Logout(ctx, app.LoginRequest{Server: name})
	if err != nil {
		return fail(std, "logout", hostrun.ExplainLoadError(cf.file, err))
	}
	fmt.Fprintln(std.display().Out, msg)
	return exitOK
}

// serverArg parses args, which must name one server.
func serverArg(fs *flag.FlagSet, args []string, std Stdio) (string, int, bool) {
	pos, code, ok := parseArgs(fs, args, std)
	if !ok {
		return "", code, false
	}
	if len(pos) != 1 {
		return "", usageError(fs, std, "want one serverName, got %d arguments", len(pos)), false
	}
	return pos[0], exitOK, true
}

// loginGate lets servers' logins run in this process, their messages on
// std's stderr: the subcommands where a person or a script drives the
// command (run and its console, tools, call, prompt, command), not serve,
// whose servers wait for `dsh-host login`. install, given to startHost,
// puts the browser step on the host's logins service as soon as that
// service runs, before the servers that use it start; remove takes it off.
type loginGate struct {
	step   logins.BrowserStep
	mu     sync.Mutex
	undo   []func()
	closed bool
}

func allowLogins(std Stdio) *loginGate {
	return &loginGate{step: logins.BrowserStep{Out: std.display().Err, Open: std.OpenURL}}
}

func (g *loginGate) install(h *host.Host) {
	try := func() {
		reg, ok := host.Lookup(h, logins.Key)
		if !ok || reg == nil {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.closed {
			g.undo = append(g.undo, reg.AllowBrowser(&g.step))
		}
	}
	// The logins service is a built-in: it runs before the composition's
	// entries, and again after a restart of its instance.
	remove := h.OnStatus(func(st host.InstanceStatus) {
		if st.ID == logins.PluginName && st.State == host.StateActive {
			try()
		}
	})
	g.mu.Lock()
	g.undo = append(g.undo, remove)
	g.mu.Unlock()
}

func (g *loginGate) remove() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for i := len(g.undo) - 1; i >= 0; i-- {
		g.undo[i]()
	}
	g.undo = nil
}
