package main

// Attach: run and serve answer on a control socket (internal/control), and
// status, tools, call, prompt, command, resources, read and reload ask the
// running host of their composition instead of starting one of their own.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

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
	return c, true, nil
}

// takeoverInterval is how often a host whose composition's socket another
// host holds tries to take it, so that the command line can reach it once
// the other has stopped.
const takeoverInterval = 2 * time.Second

// serveControl has h answer on the control socket of file until the
// returned stop is called. A second host of the same composition runs
// without it (the command line attaches to the first) and takes it over
// when the first stops. A socket that cannot be opened is logged, not
// fatal: the host runs, unreachable.
func serveControl(h *host.Host, file string, logger *slog.Logger) (stop func()) {
	// The status a command attached from another directory prints names
	// the file wherever it was run from.
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	local := &app.Local{Host: h, File: abs}
	l, err := control.Listen(file, logger)
	switch {
	case errors.Is(err, control.ErrInUse):
		pid := "?"
		if c, err := control.Dial(context.Background(), file); err == nil {
			pid = fmt.Sprint(c.PID)
			c.Close()
		}
		logger.Info("another host of this composition answers on its control socket: the command line attaches to that one", "file", file, "pid", pid)
		return takeOver(file, local, logger)
	case err != nil:
		logger.Warn("no control socket: the command line cannot attach to this host", "file", file, "err", err)
		return func() {}
	}
	logger.Debug("control socket listening", "file", file, "socket", l.Addr().String())
	srv := control.Serve(l, local, local.File, logger)
	return func() { srv.Close() }
}

// takeOver tries every takeoverInterval to take the control socket of file
// over from the host that holds it, until it has or stop is called.
func takeOver(file string, local *app.Local, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var srv *control.Server // set once taken; read after wg.Wait
	wg.Go(func() {
		tick := time.NewTicker(takeoverInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			l, err := control.Listen(file, logger)
			if errors.Is(err, control.ErrInUse) {
				continue
			}
			if err != nil {
				logger.Warn("the control socket's host stopped, and this one cannot take the socket over", "file", file, "err", err)
				return
			}
			logger.Info("the control socket's host stopped: this one answers on it now", "file", file)
			srv = control.Serve(l, local, local.File, logger)
			return
		}
	})
	return func() {
		cancel()
		wg.Wait()
		if srv != nil {
			srv.Close()
		}
	}
}
