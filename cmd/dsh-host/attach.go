package main

// Attach: run and serve answer on a control socket (internal/control), and
// status, tools, call, prompt, command and reload ask the running host of
// their composition instead of starting one of their own.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/control"
)

// registerAttach adds --no-attach to fs.
func registerAttach(fs *flag.FlagSet) *bool {
	return fs.Bool("no-attach", false, "start a host of its own even when `dsh-host run` or `serve` runs this composition (by default the command asks that host)")
}

// withAnswers runs fn on the running host of o.file when there is one
// (saying so on stderr), else on a host of its own (withHost). A running
// host that does not answer is warned about, and not used.
func (o *oneShot) withAnswers(ctx context.Context, io Stdio, name string, noAttach bool, fn func(a control.Answers) int) int {
	if !noAttach {
		if c, ok := o.attach(ctx, io); ok {
			defer c.Close()
			return fn(c)
		}
	}
	return o.withHost(ctx, io, name, func(h *host.Host) int {
		return fn(&control.Local{Host: h, File: o.file})
	})
}

// attach connects to the running host of o.file, if there is one.
func (o *oneShot) attach(ctx context.Context, io Stdio) (*control.Client, bool) {
	c, err := control.Dial(ctx, o.file)
	if err != nil {
		if !errors.Is(err, control.ErrNoHost) {
			io.logger(o.logFormat, o.logLevel).Warn("cannot reach the running host of the composition; starting one of its own", "file", o.file, "err", err)
		}
		return nil, false
	}
	fmt.Fprintf(io.display().Err, "dsh-host: attached to the running host (pid %d) for %s\n", c.PID, o.file)
	return c, true
}

// serveControl has h answer on the control socket of file until the
// returned stop is called. A second host of the same composition runs
// without one (the command line attaches to the first); a socket that
// cannot be opened is logged, not fatal: the host runs, unreachable.
func serveControl(h *host.Host, file string, logger *slog.Logger) (stop func()) {
	l, err := control.Listen(file, logger)
	if errors.Is(err, control.ErrInUse) {
		pid := "?"
		if c, err := control.Dial(context.Background(), file); err == nil {
			pid = fmt.Sprint(c.PID)
			c.Close()
		}
		logger.Info("another host of this composition answers on its control socket: the command line attaches to that one", "file", file, "pid", pid)
		return func() {}
	}
	if err != nil {
		logger.Warn("no control socket: the command line cannot attach to this host", "file", file, "err", err)
		return func() {}
	}
	logger.Debug("control socket listening", "file", file, "socket", l.Addr().String())
	// The status a command attached from another directory prints names
	// the file wherever it was run from.
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	srv := control.Serve(l, &control.Local{Host: h, File: abs}, logger)
	return func() { srv.Close() }
}
