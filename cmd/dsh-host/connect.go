package main

// `dsh-host connect`: the plan, its checks and the writing are
// internal/clientconfig's; this file parses flags, shows, asks and prints.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/internal/clientconfig"
	"github.com/dsh-host/dsh-host/internal/console"
)

func cmdConnect(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("connect", clientconfig.Synopsis, clientconfig.About)
	file := fs.String("c", "composition.yml", "composition `file` the client serves")
	url := fs.String("http", "", "reach a running gateway at `URL` (its /mcp) instead of starting serve --stdio")
	tokenEnv := fs.String("token-env", "", "with --http, the `VAR` the client reads the bearer token from")
	project := fs.String("project", "", "write the client's project file in `DIR` instead of the user's")
	name := fs.String("name", clientconfig.DefaultName, "the entry's `name` in the client's file")
	move := fs.Bool("move", false, "move the client's other servers into the composition first")
	undo := fs.Bool("undo", false, "restore the client's file as it was before connect")
	list := fs.Bool("list", false, "show which clients reach dsh-host")
	yes := fs.Bool("yes", false, "write without asking")
	dryRun := fs.Bool("dry-run", false, "show the diff and write nothing")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	env, err := clientconfig.DefaultEnv()
	if err != nil {
		return fail(io, "connect", err)
	}
	state, err := clientconfig.StateDir()
	if err != nil {
		return fail(io, "connect", err)
	}
	if *list {
		if len(pos) != 0 {
			return usageError(fs, io, "--list takes no client")
		}
		fmt.Fprint(io.Out, clientconfig.Render(clientconfig.List(env, *project, state), env.Home))
		return exitOK
	}
	if len(pos) != 1 {
		return usageError(fs, io, "want one client: %s", strings.Join(clientconfig.Clients(), ", "))
	}
	if *tokenEnv != "" && *url == "" {
		return usageError(fs, io, "--token-env goes with --http")
	}
	o := clientconfig.Options{Client: pos[0], Env: env, Name: *name, Move: *move, StateDir: state,
		Target: clientconfig.Target{URL: *url, TokenEnv: *tokenEnv}}
	if *project != "" {
		if o.Project, err = filepath.Abs(*project); err != nil {
			return fail(io, "connect", err)
		}
	}
	var plan *clientconfig.Plan
	if *undo {
		plan, err = clientconfig.Undo(o)
	} else {
		if *url == "" || *move {
			o.Target.Composition, err = clientconfig.Composition(*file)
		}
		if err == nil && *url == "" {
			o.Target.Executable, err = clientconfig.Executable()
		}
		if err == nil {
			plan, err = clientconfig.Prepare(o)
		}
	}
	if err != nil {
		return fail(io, "connect", err)
	}
	screen := io.display()
	fmt.Fprint(screen.Out, plan.Diff())
	for _, n := range plan.Notes {
		fmt.Fprintf(screen.Err, "note: %s\n", n)
	}
	switch {
	case !plan.Changed():
		fmt.Fprintf(io.Out, "%s: already connected, nothing to change\n", plan.File)
		return exitOK
	case *dryRun:
		return exitOK
	case !*yes && !io.terminal(io.In):
		return fail(io, "connect", fmt.Errorf("not written: stdin is not a terminal to confirm on; run again with --yes (or --dry-run to only see it)"))
	case !*yes && !console.Confirm(ctx, io.In, screen.Err, "Write this? [y/N]: "):
		fmt.Fprintln(screen.Err, "connect: nothing written")
		return exitFail
	}
	if err := plan.Apply(); err != nil {
		return fail(io, "connect", err)
	}
	fmt.Fprintln(io.Out, plan.Summary())
	return exitOK
}
