package main

// `dsh-host chat`: the console with the agent plugin's model as the handler
// of plain lines, or one turn for scripts with -p.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/agent"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
	"github.com/dsh-host/dsh-host/services/tools"
)

// consoleHooks are what a front end adds to the console. They travel in the
// console's context, so that the console's functions keep one signature for
// every front end.
type consoleHooks struct {
	// plain, when set, runs a line that is not a slash command.
	plain func(ctx context.Context, line string)
	// line, when set, gives the context one line runs under, and a done
	// called when the line has run (chat: a Ctrl-C cancels that context).
	line func(ctx context.Context) (context.Context, func())
	// clear, when set, erases the front end's own live line (chat's
	// progress) before a server's question is printed.
	clear func()
	// command, when set, runs a slash command of the front end's own
	// (name with its "/") and says whether it was one.
	command func(ctx context.Context, name, rest string) bool
	// help lists the front end's own commands for /help.
	help [][2]string
	// fedAnswers: the input is not a terminal, and the lines a script fed
	// ahead of a question (an approval) answer it instead of being dropped.
	fedAnswers bool
}

type consoleHooksKey struct{}

func withConsoleHooks(ctx context.Context, h consoleHooks) context.Context {
	return context.WithValue(ctx, consoleHooksKey{}, h)
}

func consoleHooksFrom(ctx context.Context) consoleHooks {
	h, _ := ctx.Value(consoleHooksKey{}).(consoleHooks)
	return h
}

// chatTakesInterrupts is true when args run chat: main then leaves SIGINT to
// it (a Ctrl-C cancels a turn) instead of stopping the process.
func chatTakesInterrupts(args []string) bool { return len(args) > 0 && args[0] == "chat" }

func cmdChat(ctx context.Context, args []string, io Stdio) int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	done := make(chan struct{})
	defer close(done)
	return runChat(ctx, args, io, sig, func(byInterrupt bool) {
		// As under run, the Ctrl-C after the one that began the shutdown
		// is SIGINT's default again, which kills a shutdown that hangs.
		if byInterrupt {
			signal.Stop(sig)
			return
		}
		go func() {
			select {
			case <-sig:
				signal.Stop(sig)
			case <-done:
			}
		}()
	})
}

// runChat is chat with its Ctrl-Cs read from interrupts (tests send their
// own). release is called once the turn or the console is over, before the
// host shuts down, with whether a Ctrl-C ended it: Ctrl-C is then no
// longer chat's (cmdChat gives it back to the process).
func runChat(ctx context.Context, args []string, io Stdio, interrupts <-chan os.Signal, release func(byInterrupt bool)) int {
	fs := flagSet("chat", "[-c FILE] [-p [PROMPT]] [--output-format text|json|stream-json] [flags]", `
Chat talks to the model of the composition's agent entry (an OpenAI-compatible
API, DeepSeek by default), which uses the composition's tools. Without -p it
opens the console on stdin: a plain line is a message to the model, whose answer
streams as it comes (its reasoning dimmed), with each tool call and the
token usage of the turn; slash commands work as in run (/new starts a new
conversation, /model NAME switches model). Ctrl-C cancels the current turn,
its stream and every tool call in flight; a second Ctrl-C at the prompt quits.

With -p, chat runs one turn and exits: the final answer goes to stdout, the
tool calls, reasoning and usage to stderr; the exit code is 0, or 1 when the
turn failed. What is piped into stdin follows the prompt (git diff | dsh-host
chat -p "review this"; a stdin silent for 3s is left alone); -p without a
prompt takes stdin alone.
--output-format json prints one object instead of the answer (result,
session_id, usage, tool_calls, is_error); stream-json prints one JSON event per
line as the turn goes (system init, assistant messages with their text and
tool_use, user messages with each tool_result, the result last), as Claude
Code's -p does.

Every conversation is saved as it goes, one line per turn, under
$DSH_HOME/sessions. chat --continue resumes the last one of this composition,
chat --resume ID any one; in the console /sessions lists them and /resume ID
switches to one.

A call the policy marks ask is asked in the console: yes once, for the session,
always (saved in settings), or no. When stdin is not a terminal, the next line
fed answers it. Under -p nobody is there to ask: such a call is denied (the
model reads why) unless --yes approves it.`)
	var o oneShot
	o.register(fs)
	prompt := fs.String("p", "", "run one turn with `PROMPT` and print the answer")
	cont := fs.Bool("continue", false, "resume the last saved conversation of this composition")
	resumeID := fs.String("resume", "", "resume the saved conversation `ID` (/sessions lists them)")
	yes := fs.Bool("yes", false, "approve what would be asked: every call the policy would ask about, and a server's sampling request (under -p nobody is there to ask: without --yes these are denied)")
	format := formatText
	fs.Var(choice{&format, []string{formatText, formatJSON, formatStreamJSON}}, "output-format",
		"under -p, what stdout gets: `text` (the answer), json (one object: result, session_id, usage, tool_calls), or stream-json (one JSON event per line)")
	args, _ = bareP(fs, args)
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	if *cont && *resumeID != "" {
		return usageError(fs, io, "--continue and --resume ID are one or the other")
	}
	once := false
	fs.Visit(func(f *flag.Flag) { once = once || f.Name == "p" })
	if once {
		wait := stdinWait
		if strings.TrimSpace(*prompt) == "" {
			wait = 0 // stdin is the prompt: it may take its time
		}
		piped, waited, err := pipedInput(io.In, wait)
		if err != nil {
			return fail(io, "chat", err)
		}
		if waited {
			fmt.Fprintf(io.display().Err, "stdin sent nothing in %v; going on without it (</dev/null skips it)\n", wait)
		}
		*prompt = withPiped(*prompt, piped)
	}
	if once && strings.TrimSpace(*prompt) == "" {
		return usageError(fs, io, "-p needs a prompt: an argument, or stdin")
	}
	if !once && format != formatText {
		return usageError(fs, io, "--output-format is for -p")
	}
	c, err := loadComposition(o.file)
	if err != nil {
		return fail(io, "chat", err)
	}
	id := agentEntry(c)
	if id == "" {
		fmt.Fprint(io.Err, noAgentHelp(o.file))
		return exitFail
	}
	saved, err := newChatSessions(o.file)
	if err != nil {
		return fail(io, "chat", err)
	}
	// The session is read before the composition starts: an unknown id
	// fails at once.
	var resumed *sessions.Loaded
	if *cont {
		last, err := sessions.Last(saved.dir, saved.composition)
		if err != nil {
			return fail(io, "chat", err)
		}
		if last == "" {
			fmt.Fprintf(io.display().Err, "no saved conversation of %s yet; starting a new one\n", saved.composition)
		}
		*resumeID = last
	}
	if *resumeID != "" {
		if resumed, err = sessions.Open(saved.dir, *resumeID); err != nil {
			return fail(io, "chat", err)
		}
		for _, w := range resumed.Warnings {
			fmt.Fprintf(io.display().Err, "warning: %s\n", w)
		}
	}
	// A Ctrl-C while the composition starts stops the start.
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	go func() {
		select {
		case <-interrupts:
			cancelStart()
		case <-startCtx.Done():
		}
	}()
	return o.withComposition(startCtx, io, "chat", c, func(h *host.Host) int {
		cancelStart() // the start is over: interrupts are the turns' now
		a, ok := host.Lookup(h, agent.Key)
		if !ok {
			release(false)
			st := host.Find(h.Status(), id)
			return fail(io, "chat", fmt.Errorf("the agent (entry %q) is not running (%s): %s", id, st.State, st.Err))
		}
		if once {
			code, interrupted := chatOnce(approving(ctx, true, *yes), io, h, a, saved, resumed, *prompt, format, interrupts)
			release(interrupted)
			return code
		}
		if resumed != nil {
			if err := a.Main().Resume(resumed); err != nil {
				release(false)
				return fail(io, "chat", err)
			}
		}
		interrupted := chatConsole(approving(ctx, false, *yes), io, h, a, saved, interrupts)
		release(interrupted)
		return exitOK
	})
}

// agentEntry returns the id of c's enabled agent entry, "" when none.
func agentEntry(c *host.Composition) string {
	for _, e := range c.Entries {
		if e.Name == agent.PluginName && !e.Disabled {
			return e.ID
		}
	}
	return ""
}

func noAgentHelp(file string) string {
	return fmt.Sprintf(`dsh-host chat: %s has no agent entry, so there is no model to talk to. Add one:

  - id: agent
    name: agent
    config:
      model: deepseek-flash           # at https://api.deepseek.com unless baseUrl says otherwise
      apiKeyEnv: DEEPSEEK_API_KEY     # the variable that holds your key

then export DEEPSEEK_API_KEY and run dsh-host chat again (dsh-host plugins lists every key).
`, file)
}

// chatOnce runs one turn for a script: the answer to stdout, the rest to
// stderr. A Ctrl-C cancels the turn, which then fails; interrupted says
// whether one did.
func chatOnce(ctx context.Context, io Stdio, h *host.Host, a *agent.Agent, sessions chatSessions, resumed *sessions.Loaded, prompt, format string, interrupts <-chan os.Signal) (code int, interrupted bool) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var byCtrlC atomic.Bool
	defer func() {
		cancel()
		wg.Wait() // no Ctrl-C is read past the turn
		interrupted = byCtrlC.Load()
	}()
	wg.Go(func() {
		select {
		case <-interrupts:
			byCtrlC.Store(true)
			cancel()
		case <-ctx.Done():
		}
	})
	screen := io.display()
	live := newLiveProgress(io.liveTerminal(io.Err))
	status := live.before(screen.Err)
	out := agent.Output{Reasoning: dimmed(io, io.Err, screen.Err), Status: status, Progress: live.report()}
	conv := a.NewConversation()
	if resumed != nil {
		if err := conv.Resume(resumed); err != nil {
			return fail(io, "chat", err), false
		}
	} else if err := sessions.start(conv, a.Model()); err != nil {
		fmt.Fprintf(status, "%v; the turn is not saved\n", err)
	}
	var script *scriptOutput
	switch {
	case format != formatText:
		script = newScriptOutput(io.Out, status, format, sessionID(conv), a.Model(), resumed != nil, modelTools(ctx, h, a))
		out.Events = script.event
	case io.terminal(io.Err):
		out.Events = terminalCalls{out: status, live: live}.event
	}
	res, err := chatSend(ctx, a, conv, prompt, out)
	showUsage(status, res.Usage)
	if script != nil {
		script.finish(res, err)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = errors.New("cancelled")
		}
		return fail(io, "chat", err), false
	}
	if script != nil {
		return exitOK, false
	}
	if io.terminal(io.Out) {
		md := newMarkdownStream(io.Out, terminalSize(io.Out))
		// Ended by a blank line, the last block renders without being
		// shown plain first.
		fmt.Fprint(md, strings.TrimRight(res.Answer, "\n")+"\n\n")
		md.Flush()
		return exitOK, false
	}
	fmt.Fprint(screen.Out, res.Answer)
	if !strings.HasSuffix(res.Answer, "\n") {
		fmt.Fprintln(screen.Out)
	}
	return exitOK, false
}

// dimmed returns where reasoning goes on raw: escaped text (safe) between
// dim and normal intensity on a terminal, safe as it is elsewhere.
func dimmed(io Stdio, raw, safe io.Writer) io.Writer {
	if !io.terminal(raw) {
		return safe
	}
	return dimWriter{raw: raw, safe: safe}
}

type dimWriter struct{ raw, safe io.Writer }

func (d dimWriter) Write(p []byte) (int, error) {
	fmt.Fprint(d.raw, "\x1b[2m")
	n, err := d.safe.Write(p)
	fmt.Fprint(d.raw, "\x1b[22m")
	return n, err
}

// chatConsole runs the console with the model as the handler of plain
// lines until /quit, the end of the input, or a second Ctrl-C at the prompt
// (quitByCtrlC).
func chatConsole(ctx context.Context, io Stdio, h *host.Host, a *agent.Agent, sessions chatSessions, interrupts <-chan os.Signal) (quitByCtrlC bool) {
	screen := io.display()
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	live := newLiveProgress(io.liveTerminal(io.Out))
	f := &chatFront{h: h, agent: a, sessions: sessions, out: live.before(screen.Out), reasoning: dimmed(io, io.Out, screen.Out), progress: live.report()}
	if io.terminal(io.Out) {
		f.events = terminalCalls{out: f.out, live: live}.event
		f.md = newMarkdownStream(live.before(io.Out), terminalSize(io.Out))
	}
	fmt.Fprintf(screen.Out, "chatting with %s — a line is a message; /help for commands, /new for a new conversation; Ctrl-C cancels a turn, twice quits\n", a.Model())
	if s := a.Main().Session(); s != nil {
		fmt.Fprintf(screen.Out, "resumed session %s (%d messages)\n", s.ID, a.Main().Len())
	}
	var wg sync.WaitGroup
	var byCtrlC atomic.Bool
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-interrupts:
				f.interrupt(func() { byCtrlC.Store(true); quit() })
			}
		}
	})
	hooks := consoleHooks{plain: f.turn, line: f.lineContext, clear: live.clear, command: f.command, help: chatCommands(), fedAnswers: !io.terminal(io.In)}
	runConsoleOn(withConsoleHooks(ctx, hooks), h, io.In, screen.Out, io.liveTerminal(io.Out))
	quit()
	wg.Wait() // no Ctrl-C is read past the console
	return byCtrlC.Load()
}

// chatFront is the chat console's state between the console and Ctrl-C.
type chatFront struct {
	h              *host.Host
	agent          *agent.Agent // the last turn's; only turn uses it
	sessions       chatSessions
	out, reasoning io.Writer
	progress       func(tool string, p tools.Progress)
	events         func(agent.Event) // a terminal's call lines; nil elsewhere
	md             *markdownStream   // renders the answer on a terminal; nil elsewhere

	mu     sync.Mutex
	cancel context.CancelFunc // the running line's; nil at the prompt
	armed  bool               // a Ctrl-C came at the prompt: the next quits
}

// lineContext is the console hook: each line runs under a context the next
// Ctrl-C cancels.
func (f *chatFront) lineContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	f.cancel, f.armed = cancel, false
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		f.cancel = nil
		f.mu.Unlock()
		cancel()
	}
}

func (f *chatFront) interrupt(quit func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.cancel != nil:
		f.cancel()
		f.cancel = nil
	case f.armed:
		quit()
	default:
		f.armed = true
		fmt.Fprintln(f.out, "(Ctrl-C again to quit, or /quit)")
	}
}

// turn sends line to the agent running now (a reload may have restarted
// it) and shows the answer as it streams.
func (f *chatFront) turn(ctx context.Context, line string) {
	a, ok := host.Lookup(f.h, agent.Key)
	if !ok {
		fmt.Fprintln(f.out, "the agent is not running; /status says why")
		return
	}
	if f.agent != nil && a != f.agent {
		// A restarted instance starts with an empty conversation.
		fmt.Fprintln(f.out, "agent restarted; new conversation")
	}
	f.agent = a
	if a.Main().Session() == nil {
		// A session starts with the conversation's first turn (a /new,
		// a restarted agent), so an empty one leaves no file.
		if err := f.sessions.start(a.Main(), a.Model()); err != nil {
			fmt.Fprintf(f.out, "%v; this conversation is not saved\n", err)
		}
	}
	out := agent.Output{Text: f.out, Reasoning: f.reasoning, Status: f.out, Progress: f.progress, Events: f.events}
	if f.md != nil {
		out = f.md.around(out)
	}
	res, err := a.Main().Turn(ctx, line, out)
	if f.md != nil {
		f.md.Flush()
	}
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(f.out, "cancelled; the turn is dropped from the conversation")
	case err != nil:
		fmt.Fprintf(f.out, "error: %v\n", err)
	}
	showUsage(f.out, res.Usage)
}

// showUsage prints a turn's token usage, when a request reported one.
func showUsage(w io.Writer, u agent.Usage) {
	if u != (agent.Usage{}) {
		fmt.Fprintln(w, u)
	}
}

// liveProgress shows the progress of a step's tool calls on one terminal
// line (the console's progressLine), the latest report of any call,
// rewritten in place; the line is erased before the next status line.
type liveProgress struct {
	term io.Writer // nil: not a terminal, nothing is shown

	mu   sync.Mutex
	line *progressLine
}

func newLiveProgress(term io.Writer) *liveProgress { return &liveProgress{term: term} }

// report returns the agent's Progress callback; nil when nothing is shown.
func (l *liveProgress) report() func(string, tools.Progress) {
	if l.term == nil {
		return nil
	}
	return func(tool string, p tools.Progress) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.line = newProgressLine(l.term, tool)
		l.line.report(p)
	}
}

// clear erases the progress line, if one is shown.
func (l *liveProgress) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.line != nil {
		l.line.clear()
		l.line = nil
	}
}

// before returns w erasing the progress line before each write.
func (l *liveProgress) before(w io.Writer) io.Writer {
	if l.term == nil {
		return w
	}
	return clearingWriter{l, w}
}

type clearingWriter struct {
	l *liveProgress
	w io.Writer
}

func (c clearingWriter) Write(p []byte) (int, error) {
	c.l.clear()
	return c.w.Write(p)
}
