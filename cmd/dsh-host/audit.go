package main

// `dsh-host audit`: the policy's trail of calls.

import (
	"context"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/services/policy/audit"
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
		return verifyTrail(io, *dir)
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

// verifyTrail prints what audit.Verify found of the trail in dir.
func verifyTrail(io Stdio, dir string) int {
	check, err := audit.Verify(dir)
	if err != nil {
		return fail(io, "audit", fmt.Errorf("the trail in %s does not verify: %w", dir, err))
	}
	out := io.display().Out
	if check.Files == 0 {
		fmt.Fprintf(out, "no trail in %s yet\n", dir)
		return exitOK
	}
	fmt.Fprintf(out, "the trail verifies: %d lines in %d files, each following the one before it, up to the latest line its state file records\n", check.Lines, check.Files)
	// Kept elsewhere, it checks the state file itself later.
	fmt.Fprintf(out, "latest line's hash: %s\n", check.Latest)
	if check.Unchained > 0 {
		fmt.Fprintf(out, "its first %d lines were written before the chain: nothing before them vouches for them\n", check.Unchained)
	}
	return exitOK
}
