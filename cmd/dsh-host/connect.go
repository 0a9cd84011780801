package main

// `dsh-host connect`: the plan, its checks and the writing are
// internal/clientconfig's; this file parses flags, shows, asks and prints.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/internal/clientconfig"
	"github.com/dsh-host/dsh-host/internal/console"
)

func cmdConnect(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("connect", clientconfig.Synopsis, clientconfig.About)
	var r clientconfig.Request
	fs.StringVar(&r.File, "c", "composition.yml", "composition `file` the client serves")
	fs.StringVar(&r.URL, "http", "", "reach a running gateway at `URL` (its /mcp) instead of starting serve --stdio")
	fs.StringVar(&r.TokenEnv, "token-env", "", "with --http, the `VAR` the client reads the bearer token from")
	fs.StringVar(&r.Project, "project", "", "write the client's project file in `DIR` instead of the user's")
	fs.StringVar(&r.Name, "name", clientconfig.DefaultName, "the entry's `name` in the client's file")
	fs.BoolVar(&r.Move, "move", false, "move the client's other servers into the composition first")
	fs.BoolVar(&r.Undo, "undo", false, "undo connect on the client's file, keeping what the client wrote since")
	list := fs.Bool("list", false, "show which clients reach dsh-host")
	yes := fs.Bool("yes", false, "write without asking")
	dryRun := fs.Bool("dry-run", false, "show the diff and write nothing")
	pos, code, ok := parseArgs(fs, args, io)
	switch {
	case !ok:
		return code
	case *list && len(pos) == 0:
		out, err := clientconfig.ListHere(r.Project)
		if err != nil {
			return fail(io, "connect", err)
		}
		fmt.Fprint(io.Out, out)
		return exitOK
	case len(pos) != 1 || *list:
		return usageError(fs, io, "want one client (%s), or --list alone", strings.Join(clientconfig.Clients(), ", "))
	case r.TokenEnv != "" && r.URL == "":
		return usageError(fs, io, "--token-env goes with --http")
	}
	r.Client = pos[0]
	plan, err := clientconfig.PlanFor(r)
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
		return fail(io, "connect", errors.New("not written: stdin is not a terminal to confirm on; run again with --yes (or --dry-run to only see it)"))
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
