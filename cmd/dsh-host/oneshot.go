package main

// The one-shot subcommands: check and plugins start nothing; tools, call,
// prompt and command ask the composition's running host when there is one
// (attach.go), else start the composition, do one thing and shut it down.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// oneShot is the flag set of a subcommand that starts the composition.
type oneShot struct {
	commonFlags
	wait time.Duration
	// elicit is what a server that asks for input during the command
	// gets: "decline" (nobody is here to answer) or "defaults".
	elicit string
	// failed, when set, is told why the composition did not start, as
	// well as stderr (chat -p's JSON result).
	failed func(error)
}

func (o *oneShot) register(fs *flag.FlagSet) {
	o.commonFlags.Register(fs, "warn")
	fs.DurationVar(&o.wait, "wait", 30*time.Second, "how long to wait for every instance to settle (active, failed or pending)")
	o.elicit = "decline"
	fs.Var(choice{Value: &o.elicit, Allowed: []string{"decline", "defaults"}}, "elicit",
		"`answer` to a server that asks for input (elicitation) meanwhile: decline, or defaults to accept its form with the defaults (for scripts)")
}

// withHost reads the composition, starts it, waits up to o.wait for it to
// settle, runs fn and shuts the host down. An instance still starting when
// the wait ends shows as "starting" in Status.
func (o *oneShot) withHost(ctx context.Context, io Stdio, name string, fn func(h *host.Host) int) int {
	c, err := hostrun.Load(o.File)
	if err != nil {
		return fail(io, name, err)
	}
	return o.withComposition(ctx, io, name, c, fn)
}

// withComposition is withHost for a command that has read the composition
// already (chat looks for its agent entry first).
func (o *oneShot) withComposition(ctx context.Context, io Stdio, name string, c *host.Composition, fn func(h *host.Host) int) int {
	opts := hostrun.OnceOptions{Logger: io.logger(o.LogFormat, o.LogLevel), Wait: o.wait, LoginOut: io.display().Err, OpenURL: io.OpenURL}
	if o.elicit == "defaults" {
		opts.Answerer = elicit.Defaults()
	}
	return hostrun.Once(ctx, c, opts, func(err error) {
		if o.failed != nil {
			o.failed(err)
		}
		fail(io, name, err)
	}, fn)
}

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
	// hostrun.Load returns what parsed along with its problems, so that
	// Check can report those of the entries too.
	c, err := hostrun.Load(cf.File)
	if c != nil {
		err = errors.Join(err, host.Check(c))
	}
	screen := io.display()
	if err != nil {
		problems := hostrun.ProblemLines(err)
		fmt.Fprintf(screen.Err, "%s: %d problem(s):\n", cf.File, len(problems))
		for _, line := range problems {
			fmt.Fprintf(screen.Err, "  %s\n", line)
		}
		return exitFail
	}
	// Warnings (a rule that can match nothing) do not fail the check.
	warnings, _ := host.Lint(c)
	for _, w := range warnings {
		fmt.Fprintf(screen.Err, "warning: %s\n", w)
	}
	fmt.Fprintf(screen.Out, "%s: ok, %d entries\n", cf.File, len(c.Entries))
	return exitOK
}

func cmdPlugins(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("plugins")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	ps := host.Plugins()
	if *asJSON {
		if err := writeJSON(io.Out, ps); err != nil {
			return fail(io, "plugins", err)
		}
		return exitOK
	}
	console.WritePlugins(io.Out, ps)
	return exitOK
}

func cmdTools(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("tools")
	var o oneShot
	o.register(fs)
	noAttach := registerAttach(fs)
	asJSON := fs.Bool("json", false, "print JSON: {tools, instances}")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	return o.withAnswers(ctx, io, "tools", *noAttach, func(a app.App) int {
		list, err := a.Tools(ctx, app.ToolsRequest{})
		if err != nil {
			return fail(io, "tools", err)
		}
		rows, st := list.Tools, list.Instances
		if *asJSON {
			if err := writeJSON(io.Out, struct {
				Tools     []toolRow   `json:"tools"`
				Instances []statusRow `json:"instances"`
			}{rows, statusRows(st)}); err != nil {
				return fail(io, "tools", err)
			}
			return exitOK
		}
		screen := io.display()
		writeTools(screen.Out, rows)
		console.WriteInstanceLines(screen.Out, st)
		return exitOK
	})
}

func cmdCall(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("call")
	var o oneShot
	o.register(fs)
	noAttach := registerAttach(fs)
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
	return o.withAnswers(ctx, io, "call", *noAttach, func(a app.App) int {
		// A live progress line on a terminal; a script's stderr gets none.
		report, clearProgress := progressLineOn(io.liveTerminal(io.Err), name)
		res, err := a.Call(ctx, app.CallRequest{Tool: name, Args: callArgs, ImageInput: *imageInput, Elicit: o.elicit, Yes: *yes, Progress: report})
		clearProgress()
		if err != nil {
			return fail(io, "call", err)
		}
		screen := io.display()
		if *asJSON {
			out := callResult{Tool: name, Content: res.Content, Value: res.Value, Failed: res.Failed}
			if res.Err != nil {
				out.Error = res.Err.Error()
				out.Refused = errors.Is(res.Err, tools.ErrRefused)
			}
			if err := writeJSON(io.Out, out); err != nil {
				return fail(io, "call", err)
			}
		} else if res.Err == nil {
			console.WriteContent(screen.Out, res.Content)
		}
		switch {
		case errors.Is(res.Err, tools.ErrUnknownTool):
			// A tool is unknown most often because its instance is not
			// running: say which, and why, rather than only that.
			if st, err := a.Status(ctx); err == nil {
				if why := hostrun.NotRunning(st.Instances, name); why != "" {
					fmt.Fprintf(screen.Err, "dsh-host call: %v; %s (see dsh-host status -c %s)\n", res.Err, why, o.File)
					return exitFail
				}
			}
			fmt.Fprintf(screen.Err, "dsh-host call: %v (list them with: dsh-host tools -c %s)\n", res.Err, o.File)
			return exitFail
		case res.Err != nil:
			fmt.Fprintf(screen.Err, "dsh-host call: %s: %v\n", name, res.Err)
			return exitFail
		case res.Failed:
			// The tool's own explanation is on stdout, as the model reads it.
			fmt.Fprintf(screen.Err, "dsh-host call: %s failed\n", name)
			return exitFail
		}
		return exitOK
	})
}

func cmdPrompt(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("prompt")
	var o oneShot
	o.register(fs)
	noAttach := registerAttach(fs)
	asJSON := fs.Bool("json", false, "print only the exact tools array")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	return o.withAnswers(ctx, io, "prompt", *noAttach, func(a app.App) int {
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
	var o oneShot
	o.register(fs)
	noAttach := registerAttach(fs)
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
	return o.withAnswers(ctx, io, "command", *noAttach, func(a app.App) int {
		reply, err := a.Command(ctx, app.CommandRequest{Line: line, Elicit: o.elicit})
		if err != nil {
			return fail(io, "command", err)
		}
		return printReply(io, reply)
	})
}

// printReply prints a command's reply, an error to stderr with exit 1,
// ending it with a newline.
func printReply(io Stdio, reply commands.Reply) int {
	screen := io.display()
	w := screen.Out
	if reply.Error {
		w = screen.Err
	}
	fmt.Fprint(w, reply.Text)
	if !strings.HasSuffix(reply.Text, "\n") {
		fmt.Fprintln(w)
	}
	if reply.Error {
		return exitFail
	}
	return exitOK
}
