package main

// status and reload: what the running host of a composition is doing, and
// having it re-read its file.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

func cmdStatus(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("status")
	var o hostrun.OneShot
	o.Register(fs)
	o.RegisterAttach(fs)
	asJSON := fs.Bool("json", false, "print JSON: {pid, file, instances, toolCounts}")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	return o.WithAnswers(ctx, io.front(), "status", func(a app.App) int {
		st, err := a.Status(ctx)
		if err != nil {
			return fail(io, "status", err)
		}
		if *asJSON {
			if err := console.WriteJSON(io.Out, struct {
				PID        int               `json:"pid"`
				File       string            `json:"file"`
				Instances  []app.InstanceRow `json:"instances"`
				ToolCounts map[string]int    `json:"toolCounts"`
			}{st.PID, st.File, app.Rows(st.Instances), st.ToolCounts}); err != nil {
				return fail(io, "status", err)
			}
			return exitOK
		}
		console.WriteInstances(io.display().Out, st.Instances, st.ToolCounts, time.Now())
		return exitOK
	})
}

func cmdReload(ctx context.Context, args []string, io Stdio) int {
	fs := subcommandFlags("reload")
	var cf commonFlags
	cf.Register(fs, "warn")
	timeout := fs.Duration("timeout", reloadTimeout, "how long to wait for the changed entries to be ready or fail")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	o := hostrun.OneShot{CommonFlags: cf}
	c, ok, err := o.Attach(ctx, io.front())
	if err != nil {
		return fail(io, "reload", err)
	}
	if !ok {
		return fail(io, "reload", fmt.Errorf("no dsh-host run or serve is running for %s: nothing to reload (dsh-host check validates the file)", cf.File))
	}
	defer c.Close()
	wctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := c.Reload(wctx)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no outcome within %s; the host finishes the reload in the background (dsh-host status shows where it stands)", *timeout)
		}
		return fail(io, "reload", err)
	}
	screen := io.display()
	if res.Error != "" {
		fmt.Fprintf(screen.Err, "dsh-host reload: %s: not applied; the running instances are unchanged:\n", cf.File)
		for line := range strings.Lines(res.Error) {
			fmt.Fprintf(screen.Err, "  %s\n", strings.TrimRight(line, "\n"))
		}
		return exitFail
	}
	fmt.Fprintf(screen.Out, "%s: reloaded; %s\n", cf.File, strings.TrimPrefix(console.Summary(res.Instances), "ready: "))
	bad := console.WriteOutcomes(screen.Out, res.Outcomes)
	console.WriteInstanceLines(screen.Out, res.Instances)
	if bad {
		return exitFail
	}
	return exitOK
}

// reloadTimeout bounds how long reload waits for its outcome: an MCP
// server's startupTimeoutMs is 30s by default.
const reloadTimeout = 2 * time.Minute
