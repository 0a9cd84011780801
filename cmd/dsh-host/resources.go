package main

// The resources and read subcommands: what the MCP servers offer to read,
// through the resources service.

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

func cmdResources(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("resources")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	server := fs.String("server", "", "only this server's resources")
	asJSON := fs.Bool("json", false, "print JSON: {resources, templates, instances}")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	req := app.ResourcesRequest{Server: *server, Query: strings.Join(pos, " ")}
	return o.WithAnswers(ctx, io.front(), "resources", func(a app.App) int {
		l, err := a.Resources(ctx, req)
		if err != nil {
			return fail(io, "resources", err)
		}
		if *asJSON {
			if err := console.WriteResourcesJSON(io.Out, l); err != nil {
				return fail(io, "resources", err)
			}
			return exitOK
		}
		screen := io.display()
		console.WriteResources(screen.Out, l.Resources, l.Templates)
		console.WriteInstanceLines(screen.Out, l.Instances)
		return exitOK
	})
}

func cmdRead(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("read")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	server := fs.String("server", "", "the server to read from")
	asJSON := fs.Bool("json", false, "print {server, uri, contents} as JSON")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, io, "want a URI, or a template and its key=value arguments")
	}
	target, rest := pos[0], pos[1:]
	var vars map[string]string
	if strings.Contains(target, "{") {
		vars = map[string]string{}
		for _, kv := range rest {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usageError(fs, io, "argument %q is not key=value", kv)
			}
			vars[k] = v
		}
	} else if len(rest) > 0 {
		return usageError(fs, io, "one URI only; key=value arguments go with a template")
	}
	req := app.ReadRequest{URI: target, Args: vars, Server: *server}
	if vars != nil {
		req.URI, req.Template = "", target
	}
	return o.WithAnswers(ctx, io.front(), "read", func(a app.App) int {
		res, err := a.Read(ctx, req)
		if err != nil {
			return fail(io, "read", err) // it names the server and the URI
		}
		if *asJSON {
			if err := console.WriteJSON(io.Out, res.Read); err != nil {
				return fail(io, "read", err)
			}
			return exitOK
		}
		screen := io.display()
		fmt.Fprint(screen.Out, res.Text)
		if !strings.HasSuffix(res.Text, "\n") {
			fmt.Fprintln(screen.Out)
		}
		return exitOK
	})
}
