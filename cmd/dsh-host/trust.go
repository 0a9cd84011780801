package main

// `dsh-host trust`: approve a tool the policy holds because its server
// added or changed it after its tools were trusted. The diff and the
// digest that approves exactly it come from the policy (Review); this
// file renders and asks.

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

func cmdTrust(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("trust")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	yes := fs.Bool("yes", false, "approve the definitions shown without asking")
	digest := fs.String("digest", "", "approve the definitions this digest names, from an earlier review, without asking")
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
	if *yes && *digest != "" {
		return usageError(fs, io, "--yes approves what is shown, --digest what was reviewed before: give one")
	}
	if *digest != "" && strings.ContainsAny(*digest, " \t\r\n") {
		return usageError(fs, io, "%q is not a digest", *digest)
	}
	req := app.TrustRequest{Server: pos[0]}
	if len(pos) == 2 {
		req.Tool = pos[1]
	}
	return o.WithAnswers(ctx, io.front(), "trust", func(a app.App) int {
		approve := func(d string) int {
			req.Digest = d
			reply, err := a.Trust(ctx, req)
			if err != nil {
				return fail(io, "trust", err)
			}
			return console.WriteReply(io.front(), reply.Text, reply.Error)
		}
		if *digest != "" {
			return approve(*digest)
		}
		review, err := a.Review(ctx, req)
		if err != nil {
			return fail(io, "trust", err)
		}
		if review.Error {
			return console.WriteReply(io.front(), review.Text, true)
		}
		screen := io.display()
		fmt.Fprint(screen.Out, review.Text)
		if !review.Pending {
			return exitOK
		}
		if !*yes && !console.Confirm(ctx, io.In, screen.Err, "Approve these definitions? [y/N]: ") {
			fmt.Fprintln(screen.Err, "trust: not approved")
			return exitFail
		}
		return approve(review.Digest)
	})
}
