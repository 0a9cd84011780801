package main

// The one-shot subcommands: check and plugins start nothing; tools, call,
// prompt and command ask the composition's running host when there is one,
// else start the composition, do one thing and shut it down
// (hostrun.OneShot).

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

func cmdCheck(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("check")
	var cf commonFlags
	cf.Register(fs, "warn")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) == 1 && cf.File == "composition.yml" {
		cf.File = pos[0] // `dsh-host check FILE` reads as well as `-c FILE`
	} else if len(pos) > 0 {
		return usageError(fs, io, "unexpected arguments %q", pos)
	}
	return hostrun.Check(io.front(), cf.File)
}

func cmdPlugins(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("plugins")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	if err := console.Plugins(io.Out, *asJSON); err != nil {
		return fail(io, "plugins", err)
	}
	return exitOK
}

func cmdTools(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("tools")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	asJSON := fs.Bool("json", false, "print JSON: {tools, instances}")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	return o.WithAnswers(ctx, io.front(), "tools", func(a app.App) int {
		list, err := a.Tools(ctx, app.ToolsRequest{})
		if err != nil {
			return fail(io, "tools", err)
		}
		rows, st := list.Tools, list.Instances
		if *asJSON {
			if err := console.WriteJSON(io.Out, struct {
				Tools     []app.Tool        `json:"tools"`
				Instances []app.InstanceRow `json:"instances"`
			}{rows, app.Rows(st)}); err != nil {
				return fail(io, "tools", err)
			}
			return exitOK
		}
		screen := io.display()
		console.WriteTools(screen.Out, rows)
		console.WriteInstanceLines(screen.Out, st)
		return exitOK
	})
}

func cmdCall(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("call")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	imageInput := fs.Bool("image-input", false, "call as an image-capable caller (tools may return images)")
	asJSON := fs.Bool("json", false, "print {tool, content, value, error} as JSON")
	yes := fs.Bool("yes", false, "approve the call where the policy would ask (nobody is here to answer)")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(fs, io, "want a tool name and optionally a JSON object of arguments")
	}
	name, rawArgs := pos[0], ""
	if len(pos) == 2 {
		rawArgs = pos[1]
	}
	callArgs, err := console.ParseToolArgs(rawArgs)
	if err != nil {
		return usageError(fs, io, "%v", err)
	}
	return o.WithAnswers(ctx, io.front(), "call", func(a app.App) int {
		// A live progress line on a terminal; a script's stderr gets none.
		report, clearProgress := console.ProgressLineOn(io.liveTerminal(io.Err), name)
		res, err := a.Call(ctx, app.CallRequest{Tool: name, Args: callArgs, ImageInput: *imageInput, Elicit: o.Elicit, Yes: *yes, Progress: report})
		clearProgress()
		if err != nil {
			return fail(io, "call", err)
		}
		return console.ReportCall(ctx, io.front(), a, o.File, name, res, *asJSON)
	})
}

func cmdPrompt(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("prompt")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	asJSON := fs.Bool("json", false, "print only the exact tools array")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	return o.WithAnswers(ctx, io.front(), "prompt", func(a app.App) int {
		p, err := a.Prompt(ctx, app.ToolsRequest{})
		if err != nil {
			return fail(io, "prompt", err)
		}
		if !*asJSON {
			if err := console.WritePromptOf(io.display().Out, p); err != nil {
				return fail(io, "prompt", err)
			}
			return exitOK
		}
		fmt.Fprintf(io.Out, "%s\n", p.ToolsJSON)
		fmt.Fprintln(io.Err, console.PromptSize(p.Count, []byte(p.ToolsJSON)))
		return exitOK
	})
}

func cmdCommand(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("command")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	line := strings.TrimSpace(strings.Join(pos, " "))
	if line == "" || line == "/" {
		return usageError(fs, io, "want a command line such as '/mcp list'")
	}
	if !strings.HasPrefix(line, "/") {
		line = "/" + line
	}
	return o.WithAnswers(ctx, io.front(), "command", func(a app.App) int {
		reply, err := a.Command(ctx, app.CommandRequest{Line: line, Elicit: o.Elicit})
		if err != nil {
			return fail(io, "command", err)
		}
		return console.WriteReply(io.front(), reply.Text, reply.Error)
	})
}
