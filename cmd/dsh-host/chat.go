package main

// `dsh-host chat`: the console with the agent plugin's model as the handler
// of plain lines, or one turn for scripts with -p.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/chatui"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

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
	format := chatui.FormatText
	fs.Var(choice{Value: &format, Allowed: []string{chatui.FormatText, chatui.FormatJSON, chatui.FormatStreamJSON}}, "output-format",
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
		wait := chatui.StdinWait
		if strings.TrimSpace(*prompt) == "" {
			wait = 0 // stdin is the prompt: it may take its time
		}
		piped, waited, err := chatui.PipedInput(io.In, wait)
		if err != nil {
			return fail(io, "chat", err)
		}
		if waited {
			fmt.Fprintf(io.display().Err, "stdin sent nothing in %v; going on without it (</dev/null skips it)\n", wait)
		}
		*prompt = chatui.WithPiped(*prompt, piped)
	}
	if once && strings.TrimSpace(*prompt) == "" {
		return usageError(fs, io, "-p needs a prompt: an argument, or stdin")
	}
	if !once && format != chatui.FormatText {
		return usageError(fs, io, "--output-format is for -p")
	}
	c, err := hostrun.Load(o.File)
	if err != nil {
		return fail(io, "chat", err)
	}
	chat, err := chatui.New(c, o.File, chatui.Resume{Last: *cont, ID: *resumeID}, io.front())
	if errors.Is(err, chatui.ErrNoAgent) {
		fmt.Fprint(io.Err, chatui.NoAgentHelp(o.File))
		return exitFail
	}
	if err != nil {
		return fail(io, "chat", err)
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
		var interrupted bool
		var err error
		if once {
			interrupted, err = chat.Once(ctx, h, *prompt, format, *yes, interrupts)
		} else {
			interrupted, err = chat.Console(ctx, h, *yes, interrupts)
		}
		release(interrupted)
		if err != nil {
			return fail(io, "chat", err)
		}
		return exitOK
	})
}

// bareP rewrites a -p that has no prompt after it (the last argument, or
// one of fs's flags follows) into -p=, so that the flag package accepts it
// and the prompt is read from stdin. It reports whether it did.
func bareP(fs *flag.FlagSet, args []string) ([]string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a != "-p" && a != "--p" {
			continue
		}
		if i+1 < len(args) && !isFlagOf(fs, args[i+1]) {
			continue
		}
		out := append([]string(nil), args...)
		out[i] = "-p="
		return out, true
	}
	return args, false
}

func isFlagOf(fs *flag.FlagSet, arg string) bool {
	if arg == "--" {
		return true
	}
	if !strings.HasPrefix(arg, "-") {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name != "" && fs.Lookup(name) != nil
}
