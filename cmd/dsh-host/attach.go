package main

// Attach: run and serve answer on a control socket (internal/control), and
// status, tools, call, prompt, command, resources, read and reload ask the
// running host of their composition instead of starting one of their own.

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/control"
)

// registerAttach adds --no-attach to fs. Its usage has no backquotes:
// flag help would show the quoted words as a value the flag takes.
func registerAttach(fs *flag.FlagSet) *bool {
	return fs.Bool("no-attach", false, "start a host of its own even when 'dsh-host run' or 'serve' runs this composition (by default the command asks that host)")
}

// withAnswers runs fn on the running host of o.File when there is one
// (saying so on stderr), else on a host of its own (withHost). A running
// host that does not answer is warned about, and not used; one that
// refuses the connection is an error saying why: a host runs, and a
// second copy of its composition (its servers started twice) is what
// --no-attach asks for, not what a refusal should bring.
func (o *oneShot) withAnswers(ctx context.Context, io Stdio, name string, noAttach bool, fn func(a app.App) int) int {
	if !noAttach {
		c, ok, err := o.attach(ctx, io)
		if err != nil {
			return fail(io, name, fmt.Errorf("%w (--no-attach starts a host of its own instead)", err))
		}
		if ok {
			defer c.Close()
			return fn(c)
		}
	}
	return o.withHost(ctx, io, name, func(h *host.Host) int {
		return fn(&app.Local{Host: h, File: o.File})
	})
}

// attach connects to the running host of o.File, if there is one. A
// host that refused the connection (control.ErrRefused) is the error,
// naming the file.
func (o *oneShot) attach(ctx context.Context, io Stdio) (*control.Client, bool, error) {
	c, err := control.Dial(ctx, o.File)
	if err != nil {
		if errors.Is(err, control.ErrRefused) {
			return nil, false, fmt.Errorf("%s: %w", o.File, err)
		}
		if !errors.Is(err, control.ErrNoHost) {
			io.logger(o.LogFormat, o.LogLevel).Warn("cannot reach the running host of the composition; starting one of its own", "file", o.File, "err", err)
		}
		return nil, false, nil
	}
	fmt.Fprintf(io.display().Err, "dsh-host: attached to the running host (pid %d) for %s\n", c.PID, o.File)
	if home := c.OtherHome(); home != "" {
		fmt.Fprintf(io.display().Err, "dsh-host: that host runs under DSH_HOME=%s, not this command's\n", home)
	}
	return c, true, nil
}
