// Package chatui is the chat front end of dsh-host: one turn for scripts
// (-p, its answer as text or as Claude Code's json and stream-json shapes),
// and the console with the agent's model as the handler of plain lines,
// the answer streamed (Markdown rendered on a terminal), tool calls shown
// as they run, conversations saved and resumed, and the policy's questions
// asked. What the command line parses (flags, the composition, starting
// the host) stays with the command; a Chat takes it from there.
package chatui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// ErrNoAgent is New's error for a composition without an enabled agent
// entry; NoAgentHelp says what to add.
var ErrNoAgent = errors.New("the composition has no agent entry")

// Chat is one chat of a composition, read before its host starts: which
// entry is the agent, where conversations are saved, and the one resumed.
type Chat struct {
	std      console.Stdio
	sessions Sessions
	resumed  string // the session to resume; "" for a new one
}

// Resume says which saved conversation a chat goes on with: the last one
// of the composition (Last), the one of ID, or the one the person picks
// from a list (Pick); none starts a new one.
type Resume struct {
	Last bool
	ID   string
	Pick bool
}

// New prepares the chat of c, read from file, before its host starts: an
// unknown session fails here, at once. The warnings of a resumed session
// go to std's stderr.
func New(c *host.Composition, file string, resume Resume, std console.Stdio) (*Chat, error) {
	if app.AgentEntry(c) == "" {
		return nil, ErrNoAgent
	}
	saved, err := NewSessions(file)
	if err != nil {
		return nil, err
	}
	ch := &Chat{std: std, sessions: saved}
	screen := std.Display()
	if resume.Pick {
		if resume.ID, err = pickSession(std.In, screen.Out, saved.dir, saved.composition, time.Now()); err != nil {
			return nil, err
		}
	}
	found, warnings, err := app.FindSession(file, resume.Last, resume.ID)
	if err != nil {
		return nil, err
	}
	if resume.Last && found.ID == "" {
		fmt.Fprintf(screen.Err, "no saved conversation of %s with an answered turn yet; starting a new one\n", saved.composition)
	}
	for _, w := range warnings {
		fmt.Fprintf(screen.Err, "warning: %s\n", w)
	}
	if resume.Last && found.ID != "" {
		fmt.Fprintln(screen.Err, continuing(found))
	}
	ch.resumed = found.ID
	return ch, nil
}

// NoAgentHelp is what to add to file when it has no agent entry.
func NoAgentHelp(file string) string {
	return fmt.Sprintf(`dsh-host chat: %s has no agent entry, so there is no model to talk to. Add one:

  - id: agent
    name: agent
    config:
      model: deepseek-flash           # at https://api.deepseek.com unless baseUrl says otherwise
      apiKeyEnv: DEEPSEEK_API_KEY     # the variable that holds your key

then export DEEPSEEK_API_KEY and run dsh-host chat again (dsh-host plugins lists every key).
`, file)
}

// Once runs one turn of prompt on a for a script: a host in this process
// (app.Local) or a running one (the control socket's client). The answer
// (or, with format json or stream-json, the turn as JSON) goes to stdout,
// the rest to stderr. yes approves what the policy would ask. A Ctrl-C
// from interrupts cancels the turn, which then fails; interrupted says
// whether one did. The turn runs in a conversation of its own, new or
// resumed: on a running host, its other front ends talk in theirs.
func (ch *Chat) Once(ctx context.Context, a app.App, prompt, format string, yes bool, interrupts <-chan os.Signal) (interrupted bool, err error) {
	return chatOnce(ctx, a, ch.std, ch.resumed, prompt, format, yes, interrupts)
}

// Console runs the console on a with the model as the handler of plain
// lines until /quit, the end of the input, or a second Ctrl-C at the
// prompt (quitByCtrlC). yes approves what the policy would ask.
func (ch *Chat) Console(ctx context.Context, a app.App, yes bool, interrupts <-chan os.Signal) (quitByCtrlC bool, err error) {
	// A new conversation (recorded from its first turn), or the resumed
	// one, whose warnings New has shown.
	info, err := a.ChatSession(ctx, app.ChatSessionRequest{Resume: ch.resumed})
	if err != nil {
		return false, err
	}
	return chatConsole(ctx, yes, ch.std, a, info, ch.sessions, interrupts), nil
}

// chatOnce is OnceOn with the session to resume ("" for a new one).
func chatOnce(ctx context.Context, a app.App, std console.Stdio, resume, prompt, format string, yes bool, interrupts <-chan os.Signal) (interrupted bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var byCtrlC atomic.Bool
	finished := false // the result object is written
	defer func() {
		cancel()
		wg.Wait() // no Ctrl-C is read past the turn
		interrupted = byCtrlC.Load()
		if err != nil && !finished {
			failedResult(std.Out, format, "", err)
		}
	}()
	wg.Go(func() {
		select {
		case <-interrupts:
			byCtrlC.Store(true)
			cancel()
		case <-ctx.Done():
		}
	})
	screen := std.Display()
	live := newLiveProgress(std.LiveTerminal(std.Err), std.Err)
	status := live.before(screen.Err)
	info, err := a.ChatSession(ctx, app.ChatSessionRequest{Resume: resume, Record: resume == ""})
	if err != nil && resume == "" && !errors.Is(err, app.ErrNoAgent) {
		fmt.Fprintf(status, "%v; the turn is not saved\n", err)
		info, err = a.ChatSession(ctx, app.ChatSessionRequest{})
	}
	if err != nil {
		return false, err
	}
	var calls func(app.ChatEvent)
	var script *scriptOutput
	switch {
	case format != FormatText:
		script = newScriptOutput(std.Out, status, format, info.Session, info.Model, resume != "", info.Tools)
		calls = script.event
	case std.IsTerminal(std.Err):
		calls = terminalCalls{out: status, live: live}.event
	default:
		calls = plainCalls{status}.event
	}
	events := turnEvents{reasoning: dimmed(std, std.Err, screen.Err), status: status, progress: live.report(), calls: calls}
	res, err := a.Chat(ctx, app.ChatRequest{Text: prompt, Conversation: info.Conversation, Unattended: true, Yes: yes, Events: events.event})
	if err != nil {
		return false, err
	}
	showUsage(status, res.Usage, res.Spent)
	if script != nil {
		script.finish(res)
		finished = true
	}
	if (res.Canceled || res.Error != "") && res.Session != "" {
		fmt.Fprintf(status, "the prompt is saved, unanswered, in session %s (dsh-host chat --resume %s; /retry there sends it again)\n", res.Session, res.Session)
	}
	switch {
	case res.Canceled:
		return false, errors.New("cancelled")
	case res.Error != "":
		return false, errors.New(res.Error)
	case script != nil:
		return false, cutError(res)
	}
	if std.IsTerminal(std.Out) {
		md := newMarkdownStream(std.Out, terminalSize(std.Out))
		// Ended by a blank line, the last block renders without being
		// shown plain first.
		fmt.Fprint(md, strings.TrimRight(res.Answer, "\n")+"\n\n")
		md.Flush()
		return false, cutError(res)
	}
	fmt.Fprint(screen.Out, res.Answer)
	if !strings.HasSuffix(res.Answer, "\n") {
		fmt.Fprintln(screen.Out)
	}
	return false, cutError(res)
}

// cutError is app.ErrCut for an answer cut at the model's output limit:
// -p prints what came, and fails.
func cutError(res app.ChatResult) error {
	if res.Cut {
		return app.ErrCut
	}
	return nil
}

// turnEvents routes a turn's events: text, reasoning and the agent's
// status lines to their writers, progress to the live line, steps and
// calls to calls.
type turnEvents struct {
	text              io.Writer // nil: shown once the turn ends
	reasoning, status io.Writer
	progress          func(string, tools.Progress) // nil: not shown
	calls             func(app.ChatEvent)          // nil: not shown
}

func (t turnEvents) event(e app.ChatEvent) {
	switch e.Kind {
	case app.ChatText:
		if t.text != nil {
			io.WriteString(t.text, e.Text)
		}
	case app.ChatReasoning:
		io.WriteString(t.reasoning, e.Text)
	case app.ChatStatus:
		io.WriteString(t.status, e.Text)
	case app.ChatProgress:
		if t.progress != nil && e.Call != nil && e.Progress != nil {
			t.progress(e.Call.Name, *e.Progress)
		}
	case app.ChatStep, app.ChatCallStart, app.ChatCallDone:
		if t.calls != nil {
			t.calls(e)
		}
	}
}

// dimmed returns where reasoning goes on raw: escaped text (safe) between
// dim and normal intensity on a terminal, safe as it is elsewhere.
func dimmed(std console.Stdio, raw, safe io.Writer) io.Writer {
	if !std.IsTerminal(raw) {
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
func chatConsole(ctx context.Context, yes bool, std console.Stdio, a app.App, info app.ChatInfo, saved Sessions, interrupts <-chan os.Signal) (quitByCtrlC bool) {
	screen := std.Display()
	ctx, quit := context.WithCancel(ctx)
	defer quit()
	live := newLiveProgress(std.LiveTerminal(std.Out), std.Out)
	f := &chatFront{app: a, sessions: saved, out: live.before(screen.Out), reasoning: dimmed(std, std.Out, screen.Out), progress: live.report(), yes: yes,
		pending: info.Pending, size: terminalSize(std.Out), conv: info.Conversation}
	f.events = plainCalls{f.out}.event
	if std.IsTerminal(std.Out) {
		f.events = terminalCalls{out: f.out, live: live}.event
		f.md = newMarkdownStream(live.before(std.Out), terminalSize(std.Out))
	}
	fmt.Fprintf(screen.Out, "chatting with %s — a line is a message; /help for commands, /new for a new conversation; Ctrl-C cancels a turn, twice quits\n", info.Model)
	if info.Session != "" {
		fmt.Fprintf(screen.Out, "resumed session %s (%d messages)\n", info.Session, info.Messages)
		showTranscript(f.out, info, f.cols())
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
	hooks := console.Hooks{Plain: f.turn, Line: f.lineContext, Clear: live.clear, Command: f.command, Help: chatCommands(),
		FedAnswers: !std.IsTerminal(std.In), Yes: yes, Answerer: func(a elicit.Answerer) { f.answer = a }}
	if ed := newEditor(ctx, std, a, screen.Out); ed != nil {
		// In raw mode a Ctrl-C at the prompt is a key, not a signal.
		hooks.Editor = editorHook(ed)
		hooks.Interrupt = func() { f.interrupt(func() { byCtrlC.Store(true); quit() }) }
		defer ed.Close()
	}
	// The console's commands name its conversation (the agent's /new,
	// /compact, /context and /cost act on it).
	console.Run(ctx, conversationApp{App: a, f: f}, std.In, screen.Out, std.LiveTerminal(std.Out), hooks)
	quit()
	wg.Wait() // no Ctrl-C is read past the console
	return byCtrlC.Load()
}

// chatFront is the chat console's state between the console and Ctrl-C.
type chatFront struct {
	app            app.App // the turns', sessions' and prompts' answers
	sessions       Sessions
	out, reasoning io.Writer
	progress       func(tool string, p tools.Progress)
	events         func(app.ChatEvent) // the call lines: a terminal's, or plain
	md             *markdownStream     // renders the answer on a terminal; nil elsewhere
	yes            bool                // chat --yes: every approval's answer
	answer         elicit.Answerer     // the console's: asks the person (nil: the host's)

	mu     sync.Mutex
	conv   string             // the console's conversation on the host (conversation.go)
	cancel context.CancelFunc // the running line's; nil at the prompt
	armed  bool               // a Ctrl-C came at the prompt: the next quits
	// pending is the line of the last turn that got no answer (failed or
	// cancelled): /retry sends it again.
	pending string
	// cancelledAt is when a Ctrl-C last cancelled a line: another within
	// quickCtrlC quits, as a person pressing it twice means.
	cancelledAt time.Time
	clock       func() time.Time  // nil: time.Now
	size        func() (int, int) // the terminal's; nil: 80 columns
}

// cols is the width the console's lines are cut to.
func (f *chatFront) cols() int {
	if f.size == nil {
		return 80
	}
	c, _ := f.size()
	return c
}

// quickCtrlC is how soon after the Ctrl-C that cancelled a turn another
// one quits.
const quickCtrlC = time.Second

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
	now := time.Now
	if f.clock != nil {
		now = f.clock
	}
	switch {
	case f.cancel != nil:
		f.cancel()
		f.cancel = nil
		f.cancelledAt = now()
	case !f.cancelledAt.IsZero() && now().Sub(f.cancelledAt) < quickCtrlC:
		quit()
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
	f.send(ctx, line, false)
}

// send runs line as a turn, or, with promptOnly, only when it is an MCP
// prompt's line; it says whether it ran.
func (f *chatFront) send(ctx context.Context, line string, promptOnly bool) bool {
	events := turnEvents{text: f.out, reasoning: f.reasoning, status: f.out, progress: f.progress, calls: f.events}
	if f.md != nil {
		events = f.md.around(events)
	}
	res, err := f.chat(ctx, app.ChatRequest{Text: line, Record: f.sessions.dir != "", PromptOnly: promptOnly,
		Unattended: f.yes, Yes: f.yes, Answer: f.answer, Events: func(e app.ChatEvent) {
			if e.Kind == app.ChatRestarted {
				// A restarted instance starts with an empty conversation.
				fmt.Fprintln(f.out, "agent restarted; new conversation")
				return
			}
			events.event(e)
		}})
	if f.md != nil {
		f.md.Flush()
	}
	switch {
	case err != nil && promptOnly:
		return false
	case errors.Is(err, app.ErrNoAgent):
		fmt.Fprintln(f.out, "the agent is not running; /status says why")
		return true
	case err != nil:
		f.setPending(line)
		fmt.Fprintf(f.out, "error: %v\n", err)
		return true
	case res.NotPrompt:
		return false
	case res.Canceled:
		f.setPending(line)
		fmt.Fprintln(f.out, "cancelled; the conversation goes on without this turn, and your message is kept: /retry sends it again")
	case res.Error != "":
		f.setPending(line)
		fmt.Fprintf(f.out, "error: %s\n(your message is kept: /retry sends it again)\n", res.Error)
	case res.Cut:
		fmt.Fprintf(f.out, "(%v)\n", app.ErrCut)
	case res.Inserted:
		// The prompt ended with the assistant's message: nothing was sent.
		fmt.Fprintf(f.out, "inserted the prompt %s; the conversation goes on from its last message\n", res.Prompt)
	}
	if !res.Canceled && res.Error == "" {
		f.setPending("")
	}
	showUsage(f.out, res.Usage, res.Spent)
	return true
}

func (f *chatFront) setPending(line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = line
}

// retry sends the line of the last turn that got no answer again.
func (f *chatFront) retry(ctx context.Context) {
	f.mu.Lock()
	line := f.pending
	f.mu.Unlock()
	if line == "" {
		fmt.Fprintln(f.out, "no message to send again: the last turn was answered")
		return
	}
	fmt.Fprintf(f.out, "sending again: %s\n", console.OneLine(line, 80))
	f.send(ctx, line, false)
}

// showUsage prints a turn's token usage and cost, when a request
// reported one, and the conversation's cost when it is more.
func showUsage(w io.Writer, u, spent app.ChatUsage) {
	if u.Prompt == 0 && u.Completion == 0 && !u.Cached {
		return
	}
	line := u.String()
	if spent.Priced && spent.Cost > u.Cost {
		line += "; this conversation " + app.Dollars(spent.Cost)
	}
	fmt.Fprintln(w, line)
}

// liveProgress shows the progress of a step's tool calls on one terminal
// line (the console's progressLine), the latest report of any call,
// rewritten in place; the line is erased before the next status line.
type liveProgress struct {
	term io.Writer // nil: not a terminal, nothing is shown
	// size is the terminal's columns and rows, read at each new line (a
	// window resized between calls); nil: unknown.
	size func() (int, int)

	mu   sync.Mutex
	line *console.ProgressLine
}

// newLiveProgress is the live line on term, the display writer of the
// terminal raw (whose size cuts the line).
func newLiveProgress(term io.Writer, raw any) *liveProgress {
	return &liveProgress{term: term, size: terminalSize(raw)}
}

// newLine starts a line for label, cut to the terminal's width. l.mu is
// held.
func (l *liveProgress) newLine(label string) {
	l.line = console.NewProgressLine(l.term, label)
	if l.size != nil {
		cols, _ := l.size()
		l.line.SetWidth(cols)
	}
}

// report returns the agent's Progress callback; nil when nothing is shown.
func (l *liveProgress) report() func(string, tools.Progress) {
	if l.term == nil {
		return nil
	}
	return func(tool string, p tools.Progress) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.newLine(tool)
		l.line.Report(p)
	}
}

// clear erases the progress line, if one is shown.
func (l *liveProgress) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.line != nil {
		l.line.Clear()
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
