package main

// status and reload: what the running host of a composition is doing, and
// having it re-read its file.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/internal/control"
)

func cmdStatus(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("status", "[-c FILE] [--json] [--no-attach] [flags]", `
Status prints every instance of the composition: its state (active,
starting, pending, failed, disabled), since when, how many tools it
registered, and its detail or error: what an MCP server said of itself
(connected, lazy and idle, needs login) or why it failed. It asks the
running host of the composition (dsh-host run or serve) when there is one;
otherwise it starts the composition, waits until every instance has settled
(bounded by --wait), prints, and shuts down.`)
	var o oneShot
	o.register(fs)
	noAttach := registerAttach(fs)
	asJSON := fs.Bool("json", false, "print JSON: {pid, file, instances, toolCounts}")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	return o.withAnswers(ctx, io, "status", *noAttach, func(a control.Answers) int {
		st, err := a.Status(ctx)
		if err != nil {
			return fail(io, "status", err)
		}
		if *asJSON {
			if err := writeJSON(io.Out, struct {
				PID        int            `json:"pid"`
				File       string         `json:"file"`
				Instances  []statusRow    `json:"instances"`
				ToolCounts map[string]int `json:"toolCounts"`
			}{st.PID, st.File, statusRows(st.Instances), st.ToolCounts}); err != nil {
				return fail(io, "status", err)
			}
			return exitOK
		}
		writeInstances(io.display().Out, st.Instances, st.ToolCounts, time.Now())
		return exitOK
	})
}

func cmdReload(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("reload", "[-c FILE] [flags]", `
Reload has the running host of the composition (dsh-host run or serve)
re-read its file now, as SIGHUP does: changed entries are restarted and
failed instances are started again. It waits for the outcome and prints the
instances; a file that does not parse or validate changes nothing and exits 1
with its problems. With no running host there is nothing to reload: it exits
1 (dsh-host check validates a file without starting anything).`)
	var cf commonFlags
	cf.register(fs, "warn")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	o := oneShot{commonFlags: cf}
	c, ok := o.attach(ctx, io)
	if !ok {
		return fail(io, "reload", fmt.Errorf("no dsh-host run or serve is running for %s: nothing to reload (dsh-host check validates the file)", cf.file))
	}
	defer c.Close()
	res, err := c.Reload(ctx)
	if err != nil {
		return fail(io, "reload", err)
	}
	screen := io.display()
	if res.Error != "" {
		fmt.Fprintf(screen.Err, "dsh-host reload: %s: not applied; the running instances are unchanged:\n", cf.file)
		for line := range strings.Lines(res.Error) {
			fmt.Fprintf(screen.Err, "  %s\n", strings.TrimRight(line, "\n"))
		}
		return exitFail
	}
	fmt.Fprintf(screen.Out, "%s: reloaded; %s\n", cf.file, strings.TrimPrefix(summary(res.Instances), "ready: "))
	writeInstanceLines(screen.Out, res.Instances)
	return exitOK
}
