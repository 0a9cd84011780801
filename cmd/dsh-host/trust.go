package main

// `dsh-host trust`: approve a tool the policy holds because its server
// added or changed it after its tools were trusted.

import (
	"context"
	"strings"

	"github.com/dsh-host/dsh-host/internal/control"
)

func cmdTrust(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("trust", "[-c FILE] SERVER [TOOL]", `
Trust approves the current definitions of an MCP server's tools (only TOOL's,
its name on the server or its mcp__ name, when given): a tool the policy holds
because the server changed or added it after its tools were first trusted is
offered and callable again. It asks the running host of the composition, like
call does; without one, it starts the composition, so that the server lists
its tools, and records them for the next start. '/policy' shows what is held
and why; the pins are kept in the policy's pins.dir ($DSH_HOME/pins).`)
	var o oneShot
	o.register(fs)
	noAttach := registerAttach(fs)
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(fs, io, "want a serverName and optionally one of its tools")
	}
	for _, p := range pos {
		if p == "" || strings.ContainsAny(p, " \t\r\n") {
			return usageError(fs, io, "%q is not a server or tool name", p)
		}
	}
	line := "/policy trust " + strings.Join(pos, " ")
	return o.withAnswers(ctx, io, "trust", *noAttach, func(a control.Answers) int {
		reply, err := a.Command(ctx, control.CommandRequest{Line: line})
		if err != nil {
			return fail(io, "trust", err)
		}
		return printReply(io, reply)
	})
}
