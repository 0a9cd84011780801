// Package console is the interactive console of dsh-host on a terminal:
// the command loop (/status, /tools, /prompt, /call, /reload and every
// registered slash command), its line source shared with the questions a
// server asks (forms, URLs, the policy's approvals), a call's live
// progress line, the tables it prints, and what is a terminal. Front ends
// add to it through Hooks (chat makes plain lines messages to a model).
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/browser"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

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
	// Yes (chat --yes) approves every call of the console's that the
	// policy would ask about.
	Yes bool
	// Answerer, when set, is given the console's answerer before the
	// first line is read, for the front end's own requests (chat's turns)
	// to ask the person at the console.
	Answerer func(elicit.Answerer)
}

// Run reads command lines from in and writes replies to out until /quit,
// the end of in, or ctx is done; a is the host it asks, in this process
// or attached. term is the raw terminal behind out, where a call shows
// its live progress line (nil: out is not a terminal, and progress is not
// shown). The servers' questions and the policy's asks during the
// console's requests are asked of the person, the answers taken from in;
// on a host in this process (app.Installer), so are the questions no
// request carries.
func Run(ctx context.Context, a app.App, in io.Reader, out, term io.Writer, hooks Hooks) {
	lines := newLineSource()
	stop := make(chan struct{})
	defer close(stop)
	go lines.feed(in, stop)
	out = &lockedWriter{w: out}
	c := &console{app: a, out: out, term: term, hooks: hooks}
	clear := c.clearProgress
	if more := hooks.Clear; more != nil {
		clear = func() { c.clearProgress(); more() }
	}
	c.asker = &asker{out: out, lines: lines, browser: browser.Open, clear: clear, fedAnswers: hooks.FedAnswers}
	if in, ok := a.(app.Installer); ok {
		defer in.InstallAnswerer(c.asker)()
	}
	if hooks.Answerer != nil {
		hooks.Answerer(c.asker)
	}
	for {
		line, ok := lines.next(ctx, false)
		if !ok || !c.exec(ctx, line) {
			return
		}
	}
}

type console struct {
	app   app.App
	out   io.Writer
	asker *asker
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
		c.help(ctx)
	case "/status":
		c.status(ctx)
	case "/tools":
		c.tools(ctx)
	case "/prompt":
		c.prompt(ctx)
	case "/call":
		c.call(ctx, rest)
	case "/reload":
		c.reload(ctx)
	default:
		c.command(ctx, line)
	}
	return true
}

func (c *console) help(ctx context.Context) {
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	for _, b := range builtinCommands() {
		fmt.Fprintf(tw, "%s\t%s\n", b[0], b[1])
	}
	for _, b := range c.hooks.Help {
		fmt.Fprintf(tw, "%s\t%s\n", b[0], b[1])
	}
	// Without the commands service, the console's own are all there is.
	cmds, _ := c.app.Commands(ctx)
	for _, cmd := range cmds {
		usage := "/" + cmd.Name
		if cmd.Usage != "" {
			usage += " " + cmd.Usage
		}
		fmt.Fprintf(tw, "%s\t%s\n", usage, OneLine(cmd.Description, 80))
	}
	tw.Flush()
}

func (c *console) status(ctx context.Context) {
	st, err := c.app.Status(ctx)
	if err != nil {
		fmt.Fprintf(c.out, "error: %v\n", err)
		return
	}
	WriteInstances(c.out, st.Instances, st.ToolCounts, time.Now())
}

func (c *console) tools(ctx context.Context) {
	list, err := c.app.Tools(ctx, app.ToolsRequest{Caller: tools.CallerConsole})
	if err != nil {
		fmt.Fprintln(c.out, err)
		return
	}
	WriteTools(c.out, list.Tools)
}

func (c *console) prompt(ctx context.Context) {
	p, err := c.app.Prompt(ctx, app.ToolsRequest{Caller: tools.CallerConsole})
	if err == nil {
		err = WritePromptOf(c.out, p)
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
	res, err := c.app.Call(ctx, app.CallRequest{Tool: name, Args: args, Caller: tools.CallerConsole, Yes: c.hooks.Yes,
		Progress: report, Answer: c.asker})
	c.clearProgress()
	if err == nil {
		err = res.Err
	}
	if err != nil {
		fmt.Fprintf(c.out, "error: %v\n", err)
		return
	}
	WriteContent(c.out, res.Content)
}

// reload has the host re-read its composition and says how it came out.
func (c *console) reload(ctx context.Context) {
	fmt.Fprintln(c.out, "reloading")
	res, err := c.app.Reload(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(c.out, "error: %v\n", err)
	case res.Error != "":
		fmt.Fprintln(c.out, "not applied; the running instances are unchanged:")
		for line := range strings.Lines(res.Error) {
			fmt.Fprintf(c.out, "  %s\n", strings.TrimRight(line, "\n"))
		}
	default:
		fmt.Fprintf(c.out, "reloaded; %s\n", strings.TrimPrefix(Summary(res.Instances), "ready: "))
		WriteOutcomes(c.out, res.Outcomes)
	}
}

func (c *console) command(ctx context.Context, line string) {
	reply, err := c.app.Command(ctx, app.CommandRequest{Line: line, Caller: tools.CallerConsole, Answer: c.asker})
	if errors.Is(err, app.ErrNoCommands) {
		fmt.Fprintf(c.out, "unknown console command %s (/help lists them); %v\n", strings.Fields(line)[0], err)
		return
	}
	if err != nil {
		fmt.Fprintf(c.out, "error: %v\n", err)
		return
	}
	text := reply.Text
	if reply.Error {
		text = "error: " + text
	}
	fmt.Fprint(c.out, text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(c.out)
	}
}
