package chatui

// chat's command line: its help, its flags, and what they ask of stdin.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dsh-host/dsh-host/internal/cli"
)

// Synopsis and About are chat's help, before its flags.
const (
	Synopsis = "[-c FILE] [-p [PROMPT]] [--output-format text|json|stream-json] [flags]"
	About    = `
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
chat --resume ID any one, chat --resume alone lists them to pick one; in the
console /sessions lists them and /resume ID switches to one. The console shows
a resumed conversation again: your lines, the answers, the tool calls. A turn
that fails keeps your message: /retry sends it again.

A call the policy marks ask is asked in the console: yes once, for the session,
always (saved in settings), or no. When stdin is not a terminal, the next line
fed answers it. Under -p nobody is there to ask: such a call is denied (the
model reads why) unless --yes approves it.`
)

// Flags are chat's own flags (the one-shot ones are the command's).
type Flags struct {
	Prompt   string
	Continue bool
	ResumeID string
	// Pick: --resume without an id lists the saved conversations to pick
	// one from (BareResume).
	Pick   bool
	Yes    bool
	Format string
	// Once is whether -p was given, set by Parsed.
	Once bool
}

// Register adds chat's flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Prompt, "p", "", "run one turn with `PROMPT` and print the answer")
	fs.BoolVar(&f.Continue, "continue", false, "resume the last saved conversation of this composition")
	fs.StringVar(&f.ResumeID, "resume", "", "resume the saved conversation `ID` (/sessions lists them); without an ID, pick one from a list")
	fs.BoolVar(&f.Yes, "yes", false, "approve what would be asked: every call the policy would ask about, and a server's sampling request (under -p nobody is there to ask: without --yes these are denied)")
	f.Format = FormatText
	fs.Var(cli.Choice{Value: &f.Format, Allowed: []string{FormatText, FormatJSON, FormatStreamJSON}}, "output-format",
		"under -p, what stdout gets: `text` (the answer), json (one object: result, session_id, usage, tool_calls), or stream-json (one JSON event per line)")
}

// Parsed notes, once fs parsed, whether -p was given; the error is a usage
// error.
func (f *Flags) Parsed(fs *flag.FlagSet) error {
	if f.Continue && (f.ResumeID != "" || f.Pick) {
		return errors.New("--continue and --resume ID are one or the other")
	}
	fs.Visit(func(fl *flag.Flag) { f.Once = f.Once || fl.Name == "p" })
	return nil
}

// TakeStdin adds, under -p, what is piped into in to the prompt (it alone
// when -p has none), saying on note when in sent nothing in StdinWait.
func (f *Flags) TakeStdin(in io.Reader, note io.Writer) error {
	if !f.Once {
		return nil
	}
	wait := StdinWait
	if strings.TrimSpace(f.Prompt) == "" {
		wait = 0 // stdin is the prompt: it may take its time
	}
	piped, waited, err := PipedInput(in, wait)
	if err != nil {
		return err
	}
	if waited {
		fmt.Fprintf(note, "stdin sent nothing in %v; going on without it (</dev/null skips it)\n", wait)
	}
	f.Prompt = WithPiped(f.Prompt, piped)
	return nil
}

// Check is the usage error of flags that do not go together, if any.
func (f *Flags) Check() error {
	if f.Once && strings.TrimSpace(f.Prompt) == "" {
		return errors.New("-p needs a prompt: an argument, or stdin")
	}
	if !f.Once && f.Format != FormatText {
		return errors.New("--output-format is for -p")
	}
	if f.Once && f.Pick {
		return errors.New("--resume needs an ID under -p: nobody is there to pick one (dsh-host chat --resume, without -p, lists them)")
	}
	return nil
}

// Resume is what f says to resume.
func (f *Flags) Resume() Resume {
	return Resume{Last: f.Continue, ID: f.ResumeID, Pick: f.Pick && f.ResumeID == ""}
}

// BareResume rewrites a --resume that has no id after it (the last
// argument, or one of fs's flags follows) into --resume=, so that the flag
// package accepts it, and notes in f that the person picks one.
func (f *Flags) BareResume(fs *flag.FlagSet, args []string) []string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a != "-resume" && a != "--resume" {
			continue
		}
		if i+1 < len(args) && !isFlagOf(fs, args[i+1]) {
			continue
		}
		out := append([]string(nil), args...)
		out[i] = "--resume="
		f.Pick = true
		return out
	}
	return args
}

// BareP rewrites a -p that has no prompt after it (the last argument, or
// one of fs's flags follows) into -p=, so that the flag package accepts it
// and the prompt is read from stdin. It reports whether it did.
func BareP(fs *flag.FlagSet, args []string) ([]string, bool) {
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

// FailedResult writes on w (stdout), under -p with --output-format json or
// stream-json, the result object of a run that failed before its turn (the
// composition did not load or start, no agent entry): a script reading
// stdout reads why. Nothing in text, nor without -p.
func (f *Flags) FailedResult(w io.Writer, err error) {
	if f.Once {
		failedResult(w, f.Format, "", err)
	}
}
