// Package console is the interactive console of dsh-host on a terminal:
// the command loop (/status, /tools, /prompt, /call, /reload and every
// registered slash command), its line source shared with the questions a
// server asks (forms, URLs, the policy's approvals), a call's live
// progress line, the tables it prints, and what is a terminal. Front ends
// add to it through Hooks (chat makes plain lines messages to a model).
package console

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

// Caller is who the console calls tools and commands as. A terminal shows
// images only as references, so the console is not image-capable.
func Caller() tools.Caller { return tools.Caller{Kind: tools.CallerConsole, ID: "console"} }

// builtinCommands are the console's own commands, for /help. Any other
// /name goes to the commands service.
func builtinCommands() [][2]string {
	return [][2]string{
		{"/help", "this list"},
		{"/status", "every instance: state, since when, tools, detail or error"},
		{"/tools", "registered tools; folded ones are in the registry but not in the prompt"},
		{"/prompt", "the assembled model-facing tools array, its bytes and estimated tokens"},
		{"/call <tool> [json]", "call a tool through the registry's pipeline"},
		{"/reload", "re-read the composition now (as SIGHUP does)"},
		{"/quit", "shut down and exit (Ctrl-D too)"},
	}
}

// Hooks are what a front end adds to the console.
type Hooks struct {
	// Plain, when set, runs a line that is not a slash command.
	Plain func(ctx context.Context, line string)
	// Line, when set, gives the context one line runs under, and a done
	// called when the line has run (chat: a Ctrl-C cancels that context).
	Line func(ctx context.Context) (context.Context, func())
	// Clear, when set, erases the front end's own live line (chat's
	// progress) before a server's question is printed.
	Clear func()
	// Command, when set, runs a slash command of the front end's own
	// (name with its "/") and says whether it was one.
	Command func(ctx context.Context, name, rest string) bool
	// Help lists the front end's own commands for /help.
	Help [][2]string
	// FedAnswers: the input is not a terminal, and the lines a script fed
	// ahead of a question (an approval) answer it instead of being dropped.
	FedAnswers bool
	// OneShot, when set (chat --yes), answers every approval of the
	// console's calls (their tools.Channels.OneShot).
	OneShot *tools.OneShot
}

// Run reads command lines from in and writes replies to out until /quit,
// the end of in, or ctx is done. term is the raw terminal behind out, where
// a call shows its live progress line (nil: out is not a terminal, and
// progress is not shown). While it runs, the console answers the servers'
// elicitation requests: it asks the person, and takes the answers from in.
func Run(ctx context.Context, h *host.Host, in io.Reader, out, term io.Writer, hooks Hooks) {
	lines := newLineSource()
	stop := make(chan struct{})
	defer close(stop)
	go lines.feed(in, stop)
	out = &lockedWriter{w: out}
	c := &console{h: h, out: out, term: term, hooks: hooks}
	clear := c.clearProgress
	if more := hooks.Clear; more != nil {
		clear = func() { c.clearProgress(); more() }
	}
	asker := &asker{out: out, lines: lines, browser: browser.Open, clear: clear, fedAnswers: hooks.FedAnswers}
	defer InstallAnswerer(h, asker)()
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
	term  io.Writer
	hooks Hooks

	mu       sync.Mutex
	progress *ProgressLine // the running call's, if shown
}

// clearProgress erases the running call's progress line, if any.
func (c *console) clearProgress() {
	c.mu.Lock()
	l := c.progress
	c.mu.Unlock()
	if l != nil {
		l.Clear()
	}
}

// exec runs one line and reports whether the console goes on.
func (c *console) exec(ctx context.Context, line string) bool {
	line = strings.TrimSpace(line)
	if line == "" {
		return true
	}
	hooks := c.hooks
	if hooks.Line != nil {
		var done func()
		ctx, done = hooks.Line(ctx)
		defer done()
	}
	if !strings.HasPrefix(line, "/") {
		if hooks.Plain != nil {
			hooks.Plain(ctx, line)
			return true
		}
		fmt.Fprintln(c.out, "commands start with /; /help lists them")
		return true
	}
	name, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	if hooks.Command != nil && hooks.Command(ctx, name, rest) {
		return true
	}
	switch name {
	case "/quit", "/exit":
		fmt.Fprintln(c.out, "bye")
		return false
	case "/help":
		c.help()
	case "/status":
		reg, _ := Registry(c.h)
		WriteInstances(c.out, c.h.Status(), CountTools(reg), time.Now())
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
	for _, b := range builtinCommands() {
		fmt.Fprintf(tw, "%s\t%s\n", b[0], b[1])
	}
	for _, b := range c.hooks.Help {
		fmt.Fprintf(tw, "%s\t%s\n", b[0], b[1])
	}
	if reg, err := CommandRegistry(c.h); err == nil {
		cmds := reg.List()
		sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
		for _, cmd := range cmds {
			usage := "/" + cmd.Name
			if cmd.Usage != "" {
				usage += " " + cmd.Usage
			}
			fmt.Fprintf(tw, "%s\t%s\n", usage, OneLine(cmd.Description, 80))
		}
	}
	tw.Flush()
}

func (c *console) tools(ctx context.Context) {
	reg, err := Registry(c.h)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	rows, err := ListTools(ctx, reg, Caller())
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	WriteTools(c.out, rows)
}

func (c *console) prompt(ctx context.Context) {
	reg, err := Registry(c.h)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	asm, err := reg.Assemble(ctx, Caller())
	if err == nil {
		err = WritePrompt(c.out, asm)
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
	args, err := ParseToolArgs(rawArgs)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	reg, err := Registry(c.h)
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	var report func(tools.Progress)
	if c.term != nil {
		l := NewProgressLine(c.term, name)
		c.mu.Lock()
		c.progress = l
		c.mu.Unlock()
		report = l.Report
		defer func() {
			c.mu.Lock()
			c.progress = nil
			c.mu.Unlock()
		}()
	}
	res := reg.Run(ctx, tools.Call{Caller: Caller(), Name: name, Args: args,
		Channels: &tools.Channels{Progress: report, OneShot: c.hooks.OneShot}})
	c.clearProgress()
	if res.Err != nil {
		fmt.Fprintf(c.out, "error: %v\n", res.Err)
		return
	}
	WriteContent(c.out, res.Content)
}

func (c *console) command(ctx context.Context, line string) {
	reg, err := CommandRegistry(c.h)
	if err != nil {
		fmt.Fprintf(c.out, "unknown console command %s (/help lists them); %v\n", strings.Fields(line)[0], err)
		return
	}
	reply := reg.Run(ctx, Caller(), line)
	text := reply.Text
	if reply.Error {
		text = "error: " + text
	}
	fmt.Fprint(c.out, text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(c.out)
	}
}
