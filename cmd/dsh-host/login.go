package main

// login and logout: the OAuth login of a remote MCP server, kept in the
// token store under $DSH_HOME/oauth, where every dsh-host process (a run,
// a serve) finds it.

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

func cmdLogin(ctx context.Context, args []string, std Stdio) int {
	fs := subcommandFlags("login")
	var cf commonFlags
	cf.Register(fs, "warn")
	timeout := fs.Duration("timeout", hostrun.LoginTimeout, "how long to wait for the login in the browser")
	name, code, ok := serverArg(fs, args, std)
	if !ok {
		return code
	}
	out := std.display()
	status, err := (&app.Local{File: cf.File}).Login(ctx, app.LoginRequest{Server: name, Browser: hostrun.Browser(std.front(), *timeout)})
	if err != nil {
		return fail(std, "login", hostrun.ExplainLoadError(cf.File, err))
	}
	fmt.Fprintf(out.Out, "%s: %s\n", name, status)
	return exitOK
}

func cmdLogout(ctx context.Context, args []string, std Stdio) int {
	fs := subcommandFlags("logout")
	var cf commonFlags
	cf.Register(fs, "warn")
	name, code, ok := serverArg(fs, args, std)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	msg, err := (&app.Local{File: cf.File}).Logout(ctx, app.LoginRequest{Server: name})
	if err != nil {
		return fail(std, "logout", hostrun.ExplainLoadError(cf.File, err))
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
