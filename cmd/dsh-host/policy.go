package main

// `dsh-host policy explain`: which rule decides a call, and why. The
// policy says it (/policy explain); this renders its answer.

import (
	"context"
	"strings"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

func cmdPolicy(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("policy")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	caller := fs.String("caller", "call", "the caller `kind`: console, chat, call or gateway")
	subject := fs.String("subject", "", "the caller identity's `subject`")
	var groups []string
	fs.Func("group", "one of the caller identity's `group`s (repeat for more)", func(s string) error {
		groups = append(groups, s)
		return nil
	})
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) < 2 || pos[0] != "explain" || len(pos) > 3 {
		return usageError(fs, io, "want: explain TOOL [ARGS]")
	}
	req := app.ExplainRequest{Tool: pos[1], Caller: *caller, Subject: *subject, Groups: groups}
	if len(pos) == 3 {
		req.Args = pos[2]
	}
	words := append([]string{*caller, pos[1]}, groups...)
	if *subject != "" {
		words = append(words, *subject)
	}
	for _, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\r\n") {
			return usageError(fs, io, "%q: a name without spaces", w)
		}
	}
	return o.WithAnswers(ctx, io.front(), "policy explain", func(a app.App) int {
		reply, err := a.Explain(ctx, req)
		if err != nil {
			return fail(io, "policy explain", err)
		}
		return console.WriteReply(io.front(), reply.Text, reply.Error)
	})
}
