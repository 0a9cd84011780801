package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Command is one subcommand of dsh-host, run with its arguments and the
// binary's streams S.
type Command[S any] struct {
	Name, Summary string
	Run           func(ctx context.Context, args []string, std S) int
}

// Dispatch runs the subcommand of cmds that args name, with std (whose
// streams are out and errw). With none, or only flags, it runs the first
// (run); `help`, -h and --help print the usage, `help NAME` NAME's;
// --version runs `version`; an unknown name is a usage error.
func Dispatch[S any](ctx context.Context, args []string, std S, out, errw io.Writer, cmds []Command[S]) int {
	find := func(name string) *Command[S] {
		for i := range cmds {
			if cmds[i].Name == name {
				return &cmds[i]
			}
		}
		return nil
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		if v := find("version"); v != nil {
			return v.Run(ctx, args[1:], std)
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelpFlag(args[0]) {
		return cmds[0].Run(ctx, args, std)
	}
	name := args[0]
	if name == "help" || isHelpFlag(name) {
		if len(args) > 1 && !isHelpFlag(args[1]) {
			return Dispatch(ctx, []string{args[1], "-h"}, std, out, errw, cmds)
		}
		usage(out, cmds)
		return ExitOK
	}
	if c := find(name); c != nil {
		return c.Run(ctx, args[1:], std)
	}
	fmt.Fprintf(errw, "dsh-host: unknown subcommand %q\n\n", name)
	usage(errw, cmds)
	return ExitUsage
}

func isHelpFlag(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

func usage[S any](w io.Writer, cmds []Command[S]) {
	fmt.Fprintln(w, "dsh-host runs a composition of plugins: MCP servers as native tools, prompt folding, and the built-in services.")
	fmt.Fprintln(w, "\nusage: dsh-host [subcommand] [flags]")
	fmt.Fprintln(w, "\nSubcommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-9s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w, "\nRun 'dsh-host <subcommand> -h' for its flags. Exit codes: 0 ok, 1 failure, 2 usage error.")
}
