// Command dsh-host runs a composition of plugins (MCP clients, prompt
// folding, the built-in services) and offers one-shot subcommands to inspect
// it: check, plugins, tools, call, prompt, command, status, reload, import,
// and serve for gateway mode. run and serve answer on a control socket
// (internal/control), which the one-shot subcommands attach to. The logic lives in the packages it imports; this command only
// parses flags, wires signals and prints.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/termsafe"
)

// Stdio is where a subcommand reads and writes. Subcommands never touch
// os.Stdin, os.Stdout or os.Stderr directly, so tests can run them in-process.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
	// Terminal reports whether v (In, Out or Err) is a terminal; nil means
	// the real test, isTerminal. Tests set it to have a buffer taken for
	// a terminal.
	Terminal func(v any) bool
	// OpenURL opens a login's authorization URL; nil is the default
	// ($BROWSER, else the platform's opener). Tests set it.
	OpenURL func(ctx context.Context, url string) error
}

// terminal reports whether v is a terminal, as s decides it.
func (s Stdio) terminal(v any) bool {
	if s.Terminal != nil {
		return s.Terminal(v)
	}
	return isTerminal(v)
}

// display returns s with Out and Err made safe for a person to read: each
// one that is a terminal escapes control characters (termsafe), so that
// text a server controls (descriptions, results, replies, errors) is shown,
// not executed; a file or pipe gets the exact bytes. Human-readable output
// goes through display; --json output and the log do not (JSON escapes
// control characters itself, and the log has its own handler, newLogger).
func (s Stdio) display() Stdio {
	if s.terminal(s.Out) {
		s.Out = termsafe.NewWriter(s.Out)
	}
	if s.terminal(s.Err) {
		s.Err = termsafe.NewWriter(s.Err)
	}
	return s
}

// logger is newLogger on s.Err, with s's terminal decision.
func (s Stdio) logger(format, level string) *slog.Logger {
	return hostrun.NewTermLogger(s.Err, format, level, s.terminal(s.Err))
}

// Exit codes shared by every subcommand.
const (
	exitOK    = cli.ExitOK
	exitFail  = cli.ExitFail
	exitUsage = cli.ExitUsage
)

// subcommand is one entry of the dispatch table. Every subcommand has the
// signature of run, so that other files (serve.go) can add theirs.
type subcommand struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, io Stdio) int
}

// subcommands returns the dispatch table, in the order help lists it.
func subcommands() []subcommand {
	return []subcommand{
		{"run", "start the composition, watch it, and open a console on a terminal (default)", cmdRun},
		{"check", "validate a composition without starting anything", cmdCheck},
		{"plugins", "list the registered plugins and their config fields", cmdPlugins},
		{"tools", "start the composition and list the registered tools", cmdTools},
		{"call", "call one tool through the registry's pipeline", cmdCall},
		{"prompt", "print the model-facing tools array and its size", cmdPrompt},
		{"command", "run one slash command, such as '/mcp list'", cmdCommand},
		{"status", "show the instances of the composition and their states (its running host's, if any)", cmdStatus},
		{"reload", "have the running host of the composition re-read its file, as SIGHUP does", cmdReload},
		{"resources", "list the MCP servers' resources and resource templates", cmdResources},
		{"read", "read one MCP resource, or a template expanded with key=value", cmdRead},
		{"import", "convert another MCP client's server list (Claude, Cursor, VS Code, Gemini, opencode, Codex) into composition entries", cmdImport},
		{"connect", "point an MCP client (claude-code, codex, gemini, opencode, cursor, vscode) at this composition; --undo, --move, --list", cmdConnect},
		{"serve", "expose the composition's tools as one MCP server (gateway mode)", cmdServe},
		{"login", "log in to a remote MCP server (OAuth) and store its token", cmdLogin},
		{"logout", "delete a remote MCP server's stored login and revoke it", cmdLogout},
		{"audit", "print the policy's trail of tool calls (--follow to watch it)", cmdAudit},
		{"add", "add an MCP server to the composition: a command, a URL, or a name in the MCP Registry (held until trusted)", cmdAdd},
		{"search", "search the MCP Registry for servers to add", cmdSearch},
		{"remove", "remove an MCP server from the composition", cmdRemove},
		{"trust", "approve the tools a server changed or added after they were trusted (the policy holds them until then)", cmdTrust},
		{"sandbox", "check [SERVER]: print each stdio server's sandbox rules and prove them with probes run inside it", cmdSandbox},
		{"policy", "explain TOOL [ARGS]: which policy rule decides a call, and why", cmdPolicy},
		{"chat", "talk to the agent entry's model, which uses the tools (-p: one turn for scripts)", cmdChat},
		{"ui", "serve a web console of the composition on this machine: servers, tools, trust, approvals, audit", cmdUI},
		{"health", "check a running gateway's /healthz (or /readyz): exit 0 if healthy, for probes without a shell", cmdHealth},
		{"version", "print the version, commit, Go version and platform (also --version)", cmdVersion},
	}
}

func main() {
	// First: a process the host launched to sandbox a server becomes
	// that server here (internal/sandbox).
	sandbox.Main()
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if chatTakesInterrupts(os.Args[1:]) {
		sigs = sigs[1:] // a Ctrl-C cancels a turn of chat, not the process
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	// After the first signal, give the default behaviour back: a second
	// Ctrl-C kills a shutdown that takes too long.
	go func() { <-ctx.Done(); stop() }()
	code := dispatch(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

// dispatch runs the subcommand args names; with none (or only flags) it runs
// `run`.
func dispatch(ctx context.Context, args []string, io Stdio) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		return cmdVersion(ctx, args[1:], io)
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelpFlag(args[0]) {
		return cmdRun(ctx, args, io)
	}
	name := args[0]
	if name == "help" || isHelpFlag(name) {
		if len(args) > 1 && !isHelpFlag(args[1]) {
			return dispatch(ctx, []string{args[1], "-h"}, io)
		}
		printUsage(io.Out)
		return exitOK
	}
	for _, c := range subcommands() {
		if c.name == name {
			return c.run(ctx, args[1:], io)
		}
	}
	fmt.Fprintf(io.Err, "dsh-host: unknown subcommand %q\n\n", name)
	printUsage(io.Err)
	return exitUsage
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "dsh-host runs a composition of plugins: MCP servers as native tools, prompt folding, and the built-in services.")
	fmt.Fprintln(w, "\nusage: dsh-host [subcommand] [flags]")
	fmt.Fprintln(w, "\nSubcommands:")
	for _, c := range subcommands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'dsh-host <subcommand> -h' for its flags. Exit codes: 0 ok, 1 failure, 2 usage error.")
}

// The flag handling is internal/cli's; these read the streams from Stdio.
type (
	commonFlags = cli.CommonFlags
	choice      = cli.Choice
)

func flagSet(name, synopsis, about string) *flag.FlagSet { return cli.FlagSet(name, synopsis, about) }

func parseFlags(fs *flag.FlagSet, args []string, io Stdio) (code int, ok bool) {
	return cli.ParseFlags(fs, args, io.Out, io.Err)
}

func parseArgs(fs *flag.FlagSet, args []string, io Stdio) (positional []string, code int, ok bool) {
	return cli.ParseArgs(fs, args, io.Out, io.Err)
}

func usageError(fs *flag.FlagSet, io Stdio, format string, args ...any) int {
	return cli.UsageError(fs, io.Err, format, args...)
}

// fail prints err prefixed with the subcommand and returns exitFail. The
// error may quote a server, so on a terminal it is escaped (display).
func fail(io Stdio, name string, err error) int {
	fmt.Fprintf(io.display().Err, "dsh-host %s: %v\n", name, err)
	return exitFail
}

// subcommandFlags is flagSet with name's help (cli.Helps).
func subcommandFlags(name string) *flag.FlagSet {
	h := cli.Helps[name]
	return cli.FlagSet(name, h.Synopsis, h.About)
}
