package main

// `dsh-host audit`: the policy's trail of calls.

import (
	"context"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/policy/audit"
)

func cmdAudit(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("audit", "[-c FILE | --dir DIR] [--json] [--follow] [--tool GLOB] [--since DURATION] [--verify]", `
Audit prints the policy's trail of tool calls: one line per call with its time,
caller, tool, the policy's decision and rule, outcome, duration and result size.
Arguments appear as their SHA-256 unless the policy's audit.arguments is on.
--json prints the trail's own JSON lines; --follow keeps printing calls as they
come, until interrupted. --verify checks the trail's hash chain and its state
file instead, and names the first line, or the file, that does not follow.
The trail is $DSH_HOME/audit, or the audit.dir of the policy entry of the
composition -c names, or --dir.`)
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
		d, err := compositionAuditDir(*file)
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

// compositionAuditDir is the audit.dir of file's policy entry (the
// built-in default when it has none).
func compositionAuditDir(file string) (string, error) {
	c, err := hostrun.Load(file)
	if err != nil {
		return "", err
	}
	for _, e := range c.Entries {
		if e.ID != policy.PluginName {
			continue
		}
		pc, err := host.Decode[policy.Config](&e)
		if err != nil {
			return "", err
		}
		if !pc.Audit.Enabled {
			return "", fmt.Errorf("%s: the policy entry turns the audit trail off (audit.enabled: false)", file)
		}
		return pc.Audit.Dir, nil
	}
	return policy.DefaultConfig().Audit.Dir, nil
}
