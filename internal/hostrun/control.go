package hostrun

// The control socket of a running host (internal/control): run and serve
// answer on it, and the command line attaches to it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/control"
)

// takeoverInterval is how often a host whose composition's socket another
// host holds tries to take it, so that the command line can reach it once
// the other has stopped.
const takeoverInterval = 2 * time.Second

// ServeControl has h answer on the control socket of file until the
// returned stop is called. A second host of the same composition runs
// without it (the command line attaches to the first) and takes it over
// when the first stops. A socket that cannot be opened is logged, not
// fatal: the host runs, unreachable.
func ServeControl(h *host.Host, file string, logger *slog.Logger) (stop func()) {
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
