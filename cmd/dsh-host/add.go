package main

// `dsh-host add`, `search` and `remove`: the entries, the registry and the
// hold are internal/addserver's; this file parses flags and prints.

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/internal/addserver"
	"github.com/dsh-host/dsh-host/internal/registry"
)

func cmdAdd(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("add")
	file := fs.String("c", "composition.yml", "composition `file` to add the server to")
	trust := fs.Bool("trust", false, "trust the server's first list of tools instead of holding them until reviewed")
	transport := fs.String("transport", "", "`http` or sse: NAME URL is a remote server")
	use := fs.String("use", "", "for a registry server: the `kind` to run, npm, pypi or remote")
	name := fs.String("name", "", "for a registry server: the entry's `name`")
	env, headers := addserver.Pairs{}, addserver.Pairs{}
	fs.Var(env, "env", "`K=V` in a stdio server's environment (repeatable)")
	fs.Var(headers, "header", "`K=V` header of a remote server's requests (repeatable)")
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	var plan *addserver.Plan
	var err error
	switch {
	case command != nil:
		if len(pos) != 1 || len(command) == 0 || *transport != "" && *transport != "stdio" {
			return usageError(fs, io, "want NAME -- COMMAND [ARGS...]")
		}
		plan, err = addserver.Command(pos[0], command[0], command[1:], env)
	case *transport != "":
		if len(pos) != 2 {
			return usageError(fs, io, "want --transport %s NAME URL", *transport)
		}
		plan, err = addserver.Remote(pos[0], *transport, pos[1], headers)
	case len(pos) == 1 && addserver.IsRef(pos[0]):
		var reg *registry.Client
		if reg, err = addserver.Registry(os.Environ()); err == nil {
			from := addserver.From{Prefer: *use, Name: *name}
			plan, err = addserver.FromRegistry(ctx, reg, pos[0], from, addserver.NewLineAsker(io.In, io.display().Err))
		}
	default:
		return usageError(fs, io, "want NAME -- COMMAND [ARGS...], --transport http|sse NAME URL, or a registry name (io.github.owner/server)")
	}
	if err != nil {
		return fail(io, "add", err)
	}
	res, err := addserver.Write(ctx, plan, addserver.Options{File: *file, Trust: *trust})
	if err != nil {
		return fail(io, "add", err)
	}
	io.display().Out.Write([]byte(res.Text(plan)))
	return exitOK
}

func cmdSearch(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("search")
	limit := fs.Int("limit", 30, "list at most `N` servers")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(fs, io, "want one query")
	}
	query := strings.Join(pos, "")
	reg, err := addserver.Registry(os.Environ())
	if err != nil {
		return fail(io, "search", err)
	}
	r, err := reg.Search(ctx, query, max(*limit, 1))
	if err != nil {
		return fail(io, "search", err)
	}
	io.display().Out.Write([]byte(addserver.SearchText(r, query)))
	return exitOK
}

func cmdRemove(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("remove")
	file := fs.String("c", "composition.yml", "composition `file` to remove the server from")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, io, "want the server's name")
	}
	text, err := addserver.RemoveText(ctx, *file, pos[0])
	if err != nil {
		return fail(io, "remove", err)
	}
	io.display().Out.Write([]byte(text))
	return exitOK
}
