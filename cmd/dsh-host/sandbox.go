package main

import (
	"context"
	"fmt"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

// cmdSandbox is `dsh-host sandbox check`: the logic is app's CheckSandbox
// (internal/sandbox's Check, through mcp-client's config).
func cmdSandbox(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("sandbox")
	var file string
	fs.StringVar(&file, "c", "composition.yml", "composition `file`")
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fs.SetOutput(io.Out)
			fs.Usage()
			return exitOK
		}
		return usageError(fs, io, "want the subcommand check")
	}
	pos, code, ok := parseArgs(fs, args[1:], io)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(fs, io, "unexpected arguments %q", pos[1:])
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
	}
	failed, err := (&app.Local{File: file}).CheckSandbox(ctx, name, io.Out)
	if err != nil {
		fmt.Fprintln(io.Err, hostrun.ExplainLoadError(file, err))
		return exitFail
	}
	if failed {
		return exitFail
	}
	return exitOK
}
