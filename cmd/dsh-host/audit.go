package main

// `dsh-host audit`: the policy's trail of calls.

import (
	"context"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

func cmdAudit(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("audit")
	file := fs.String("c", "", "read the trail of this composition's policy entry (its audit.dir)")
	asJSON := fs.Bool("json", false, "print the JSON lines as written")
	follow := fs.Bool("follow", false, "keep printing new calls")
	tool := fs.String("tool", "", "only calls of tools matching `GLOB` (* matches any run)")
	since := fs.Duration("since", 0, "only calls of the last `DURATION` (1h, 30m)")
	dir := fs.String("dir", dshhome.Default("audit"), "the trail's `directory` (the policy's audit.dir)")
	verify := fs.Bool("verify", false, "check the trail's hash chain: no line changed, cut or dropped")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	if *file != "" {
		d, err := hostrun.AuditDir(*file)
		if err != nil {
			return fail(io, "audit", err)
		}
		*dir = d
	}
	if *dir == "" {
		return usageError(fs, io, "no --dir, and $DSH_HOME cannot be resolved")
	}
	if *verify {
		return console.VerifyTrail(io.front(), *dir)
	}
	var from time.Time
	if *since > 0 {
		from = time.Now().Add(-*since)
	}
	// The trail is files: read here, attached to a host or not.
	seq, err := (&app.Local{}).Audit(ctx, app.AuditQuery{Dir: *dir, Tool: *tool, Since: from, Follow: *follow})
	if err != nil {
		return fail(io, "audit", err)
	}
	for rec, err := range seq {
		if err != nil {
			return fail(io, "audit", err)
		}
		if *asJSON {
			io.Out.Write(append(rec.Line, '\n'))
			continue
		}
		console.WriteAuditLine(io.display().Out, rec.Record)
	}
	return exitOK
}
