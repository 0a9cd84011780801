package main

import (
	"context"
	"fmt"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// cmdSandbox is `dsh-host sandbox check`: the logic is internal/sandbox's
// (Check, Report.Write), reached through mcp-client's config.
func cmdSandbox(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("sandbox", "check [-c FILE] [SERVER]", `
Sandbox check prints, for each stdio server of the composition (or the one
named by serverName or id), the sandbox it would start in: the effective
rules (what is granted by default and by its sandbox key), what is not
enforced, and the outcome of probes run inside that same sandbox, without
starting the server: reading a file outside the grants, creating one, and
connecting to a TCP port not granted. A probe that gets through where the
rules say it should not fails the check (exit 1).`)
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
	c, err := loadComposition(file)
	if err != nil {
		fmt.Fprintln(io.Err, err)
		return exitFail
	}
	var names []string
	checked, failed := 0, false
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Name != mcpclient.PluginName || e.Disabled {
			continue
		}
		v, err := host.Decode[mcpclient.Config](e)
		if err != nil {
			fmt.Fprintln(io.Err, err)
			return exitFail
		}
		cfg := *v
		names = append(names, cfg.ServerName)
		if len(pos) == 1 && cfg.ServerName != pos[0] && e.ID != pos[0] {
			continue
		}
		if cfg.Transport != mcpclient.TransportStdio {
			if len(pos) == 1 {
				fmt.Fprintf(io.Err, "%s: %s is not a stdio server: nothing runs on this machine to sandbox\n", file, pos[0])
				return exitFail
			}
			continue
		}
		checked++
		fmt.Fprintf(io.Out, "%s (entry %q):\n", cfg.ServerName, e.ID)
		rep, err := mcpclient.CheckSandbox(ctx, cfg)
		if err != nil {
			fmt.Fprintf(io.Out, "  cannot check: %v\n", err)
			failed = true
			continue
		}
		rep.Write(io.Out)
		failed = failed || rep.Failed()
	}
	switch {
	case len(pos) == 1 && checked == 0:
		fmt.Fprintln(io.Err, notFound(file, pos[0], names))
		return exitFail
	case checked == 0:
		fmt.Fprintf(io.Out, "%s has no enabled stdio server\n", file)
	}
	if failed {
		return exitFail
	}
	return exitOK
}

func notFound(file, name string, names []string) string {
	msg := fmt.Sprintf("%s has no enabled mcp-client entry with serverName %q", file, name)
	if len(names) > 0 {
		msg += fmt.Sprintf(" (it has: %v)", names)
	}
	return msg
}
