package main

import (
	"context"

	"github.com/dsh-host/dsh-host/internal/webui"
)

// cmdUI serves the web console (internal/webui) of the composition's
// running host, or of a host it starts when none runs.
func cmdUI(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("ui", "[-c FILE] [--addr 127.0.0.1:0] [--no-open] [flags]", `
UI serves a web console on this machine: the servers and their state, the
tools (with a form to try one), held tool definitions to review and trust,
calls a policy rule asks about, the audit trail live, and the composition.
It attaches to the running host of the composition (dsh-host run or serve)
when there is one, else starts the composition in this process. It prints
the console's URL, which carries this run's token, and opens it in the
browser unless --no-open. See docs/web-console.md.`)
	var cf commonFlags
	cf.Register(fs, "warn")
	addr := fs.String("addr", "127.0.0.1:0", "the loopback `address` to serve on (port 0: a free one)")
	noOpen := fs.Bool("no-open", false, "print the URL without opening a browser")
	if code, ok := parseFlags(fs, args, io); !ok {
		return code
	}
	o := webui.RunOptions{File: cf.File, Addr: *addr, Out: io.display().Out, Logger: io.logger(cf.LogFormat, cf.LogLevel)}
	if !*noOpen {
		o.Open = webui.OpenBrowser
		if io.OpenURL != nil {
			o.Open = func(url string) error { return io.OpenURL(ctx, url) }
		}
	}
	if err := webui.Run(ctx, o); err != nil {
		return fail(io, "ui", err)
	}
	return exitOK
}
