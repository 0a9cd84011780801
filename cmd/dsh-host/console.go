package main

// The interactive console of `dsh-host run` on a terminal.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/browser"
	"github.com/dsh-host/dsh-host/services/tools"
)

// consoleCaller is who the console calls tools and commands as. A terminal
// shows images only as references, so the console is not image-capable.
var consoleCaller = tools.Caller{Kind: tools.CallerConsole, ID: "console"}

// builtinConsoleCommands are the console's own commands, for /help. Any other
// /name goes to the commands service.
var builtinConsoleCommands = [][2]string{
	{"/help", "this list"},
	{"/status", "every instance: state, since when, tools, detail or error"},
	{"/tools", "registered tools; folded ones are in the registry but not in the prompt"},
	{"/prompt", "the assembled model-facing tools array, its bytes and estimated tokens"},
	{"/call <tool> [json]", "call a tool through the registry's pipeline"},
	{"/reload", "re-read the composition now (as SIGHUP does)"},
	{"/quit", "shut down and exit (Ctrl-D too)"},
}

// runConsole reads command lines from in and writes replies to out until
// /quit, the end of in, or ctx is done.
func runConsole(ctx context.Context, h *host.Host, in io.Reader, out io.Writer) {
	runConsoleOn(ctx, consoleHooks{}, h, in, out, nil)
}

// runConsoleOn is runConsole with term, the raw terminal behind out, where
// a call shows its live progress line (nil: out is not a terminal, and
// progress is not shown). While it runs, the console answers the servers'
// elicitation requests: it asks the person, and takes the answers from in.
func runConsoleOn(ctx context.Context, hooks consoleHooks, h *host.Host, in io.Reader, out, term io.Writer) {
	lines := newLineSource()
	stop := make(chan struct{})
	defer close(stop)
	go lines.feed(in, stop)
	out = &lockedWriter{w: out}
	c := &console{h: h, out: out, term: term, hooks: hooks}
	clear := c.clearProgress
	if more := hooks.clear; more != nil {
		clear = func() { c.clearProgress(); more() }
	}
	asker := &consoleAsker{out: out, lines: lines, browser: browser.Open, clear: clear, fedAnswers: hooks.fedAnswers}
	defer installAnswerer(h, asker)()
	for {
		line, ok := lines.next(ctx, false)
		if !ok || !c.exec(ctx, line) {
			return
		}
	}
}

type console struct {
	h   *host.Host
	out io.Writer
	// term is the raw terminal for a call's progress line; nil when none.
	term io.Writer
	// hooks are the front end's (chat's) additions: its own commands
	// (for /help too), its one-shot answer.
	hooks consoleHooks

	mu       sync.Mutex
	progress *progressLine // the running call's, if shown
}

// clearProgress erases the running call's progress line, if any.
func (c *console) clearProgress() {
	c.mu.Lock()
	l := c.progress
	c.mu.Unlock()
	if l != nil {
		l.clear()
	}
}

// exec runs one line and reports whether the console goes on.
func (c *console) exec(ctx context.Context, line string) bool {
	line = strings.TrimSpace(line)
	if line == "" {
		return true
	}
	hooks := c.hooks
	if hooks.line != nil {
		var done func()
		ctx, done = hooks.line(ctx)
		defer done()
	}
	if !strings.HasPrefix(line, "/") {
		if hooks.plain != nil {
			hooks.plain(ctx, line)
			return true
		}
		fmt.Fprintln(c.out, "commands start with /; /help lists them")
		return true
	}
	name, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	if hooks.command != nil && hooks.command(ctx, name, rest) {
		return true
	}
	switch name {
	case "/quit", "/exit":
		fmt.Fprintln(c.out, "bye")
		return false
	case "/help":
		c.help()
	case "/status":
		reg, _ := registry(c.h)
		writeInstances(c.out, c.h.Status(), countTools(reg), time.Now())
	case "/tools":
		c.tools(ctx)
	case "/prompt":
		c.prompt(ctx)
	case "/call":
		c.call(ctx, rest)
	case "/reload":
		c.h.Reload()
		fmt.Fprintln(c.out, "reloading; /status shows the result")
	default:
		c.command(ctx, line)
	}
	return true
}

func (c *console) help() {
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	for _, b := range builtinConsoleCommands {
		fmt.Fprintf(tw, "%s\t%s\n", b[0], b[1])
	}
	for _, b := range c.hooks.help {
		fmt.Fprintf(tw, "%s\t%s\n", b[0], b[1])
	}
	if reg, err := commandRegistry(c.h); err == nil {
		cmds := reg.List()
		sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
		for _, cmd := range cmds {
			usage := "/" + cmd.Name
			if cmd.Usage != "" {
				usage += " " + cmd.Usage
			}
			fmt.Fprintf(tw, "%s\t%s\n", usage, oneLine(cmd.Description, 80))
		}
	}
	tw.Flush()
}

func (c *console) tools(ctx context.Context) {
	reg, err := registry(c.h)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	rows, err := listTools(ctx, reg, consoleCaller)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	writeTools(c.out, rows)
}

func (c *console) prompt(ctx context.Context) {
	reg, err := registry(c.h)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	asm, err := reg.Assemble(ctx, consoleCaller)
	if err == nil {
		err = writePrompt(c.out, asm)
	}
	if err != nil {
		fmt.Fprintln(c.out, err)
	}
}

func (c *console) call(ctx context.Context, rest string) {
	name, rawArgs, _ := strings.Cut(rest, " ")
	if name == "" {
		fmt.Fprintln(c.out, `usage: /call <tool> [json], for example /call greet {"name":"Ada"}`)
		return
	}
	args, err := parseToolArgs(rawArgs)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	reg, err := registry(c.h)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	var report func(tools.Progress)
	if c.term != nil {
		l := newProgressLine(c.term, name)
		c.mu.Lock()
		c.progress = l
		c.mu.Unlock()
		report = l.report
		defer func() {
			c.mu.Lock()
			c.progress = nil
			c.mu.Unlock()
		}()
	}
	res := reg.Run(ctx, tools.Call{Caller: consoleCaller, Name: name, Args: args,
		Channels: &tools.Channels{Progress: report, OneShot: c.hooks.oneShot}})
	c.clearProgress()
	if res.Err != nil {
		fmt.Fprintf(c.out, "error: %v\n", res.Err)
		return
	}
	writeContent(c.out, res.Content)
}

func (c *console) command(ctx context.Context, line string) {
	reg, err := commandRegistry(c.h)
	if err != nil {
		fmt.Fprintf(c.out, "unknown console command %s (/help lists them); %v\n", strings.Fields(line)[0], err)
		return
	}
	reply := reg.Run(ctx, consoleCaller, line)
	text := reply.Text
	if reply.Error {
		text = "error: " + text
	}
	fmt.Fprint(c.out, text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(c.out)
	}
}
