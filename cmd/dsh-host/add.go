package main

// `dsh-host add`, `search` and `remove`: the entries, the registry and the
// hold are internal/addserver's; this file parses flags and prints.

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/internal/addserver"
)

func cmdAdd(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("add")
	file := fs.String("c", "composition.yml", "composition `file` to add the server to")
	trust := fs.Bool("trust", false, "trust the server's first list of tools instead of holding them until reviewed")
	r := addserver.Request{Env: addserver.Pairs{}, Headers: addserver.Pairs{}}
	fs.StringVar(&r.Transport, "transport", "", "`http` or sse: NAME URL is a remote server")
	fs.StringVar(&r.Use, "use", "", "for a registry server: the `kind` to run, npm, pypi or remote")
	fs.StringVar(&r.Name, "name", "", "for a registry server: the entry's `name`")
	fs.Var(r.Env, "env", "`K=V` in a stdio server's environment (repeatable)")
	fs.Var(r.Headers, "header", "`K=V` header of a remote server's requests (repeatable)")
	if i := slices.Index(args, "--"); i >= 0 {
		args, r.Command = args[:i], args[i+1:]
	}
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	r.Args = pos
	plan, err := addserver.PlanOf(ctx, r, os.Environ(), io.In, io.display().Err)
	if addserver.IsUsage(err) {
		return usageError(fs, io, "%v", err)
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
	text, err := addserver.SearchFor(ctx, os.Environ(), strings.Join(pos, ""), *limit)
	if err != nil {
		return fail(io, "search", err)
	}
	io.display().Out.Write([]byte(text))
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
