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
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/sandbox"
)

// Stdio is where a subcommand reads and writes (console.Stdio): never
// os.Stdin, os.Stdout or os.Stderr directly, so tests can run them
// in-process. Its methods hand it to the packages that print.
type Stdio console.Stdio

func (s Stdio) front() console.Stdio               { return console.Stdio(s) }
func (s Stdio) terminal(v any) bool                { return s.front().IsTerminal(v) }
func (s Stdio) liveTerminal(w io.Writer) io.Writer { return s.front().LiveTerminal(w) }
func (s Stdio) logger(format, level string) *slog.Logger {
	return hostrun.Logger(s.front(), format, level)
}

// display is s made safe for a person to read (console.Stdio.Display):
// human-readable output goes through it; --json output and the log do not.
func (s Stdio) display() Stdio { return Stdio(s.front().Display()) }

// Exit codes shared by every subcommand.
const (
	exitOK    = cli.ExitOK
	exitFail  = cli.ExitFail
	exitUsage = cli.ExitUsage
)

// subcommand is one entry of the dispatch table. Every subcommand has the
// signature of run, so that other files can add theirs.
type subcommand struct {
	name, summary string
	run           func(ctx context.Context, args []string, io Stdio) int
}

// subcommands returns the dispatch table, in the order help lists it;
// run, the first, is the default.
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

// dispatch runs the subcommand args name (cli.Dispatch).
func dispatch(ctx context.Context, args []string, io Stdio) int {
	var cmds []cli.Command[Stdio]
	for _, c := range subcommands() {
		cmds = append(cmds, cli.Command[Stdio]{Name: c.name, Summary: c.summary, Run: c.run})
	}
	return cli.Dispatch(ctx, args, io, io.Out, io.Err, cmds)
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

// fail is hostrun.Fail: err prefixed with the subcommand, exitFail.
func fail(io Stdio, name string, err error) int { return hostrun.Fail(io.front(), name, err) }

// subcommandFlags is flagSet with name's help (cli.Helps).
func subcommandFlags(name string) *flag.FlagSet {
	h := cli.Helps[name]
	return cli.FlagSet(name, h.Synopsis, h.About)
}
