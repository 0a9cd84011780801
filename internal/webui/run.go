package webui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/internal/browser"
	"github.com/dsh-host/dsh-host/internal/control"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

// RunOptions configure `dsh-host ui`.
type RunOptions struct {
	File string // the composition
	Addr string // where the console listens (loopback)
	// Open opens the console's URL in the browser (nil: not opened).
	Open   func(url string) error
	Out    io.Writer // the URL and what the command says
	Logger *slog.Logger
}

// Run is `dsh-host ui`: the console of the running host of o.File,
// attached to its control socket, or of a host this process starts when
// none runs; until ctx ends.
func Run(ctx context.Context, o RunOptions) error {
	if err := loopback(orDefault(o.Addr)); err != nil {
		return err
	}
	c, err := control.Dial(ctx, o.File)
	switch {
	case err == nil:
		defer c.Close()
		fmt.Fprintf(o.Out, "dsh-host ui: attached to the running host (pid %d) of %s\n", c.PID, o.File)
		return serveUntil(ctx, c, o)
	case !errors.Is(err, control.ErrNoHost):
		return fmt.Errorf("%s: %w", o.File, err)
	}
	comp, err := hostrun.Load(o.File)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "dsh-host ui: no host runs %s: starting it in this process\n", o.File)
	h, err := hostrun.Start(ctx, comp, &host.Options{Logger: o.Logger}, nil)
	defer hostrun.Shutdown(h, o.Logger)
	if err != nil {
		return err
	}
	stopFollow := hostrun.Follow(ctx, h, o.File, nil, o.Logger)
	defer stopFollow()
	stopControl := hostrun.ServeControl(h, o.File, o.Logger)
	defer stopControl()
	abs, err := filepath.Abs(o.File)
	if err != nil {
		abs = o.File
	}
	return serveUntil(ctx, &app.Local{Host: h, File: abs}, o)
}

func orDefault(addr string) string {
	if addr == "" {
		return "127.0.0.1:0"
	}
	return addr
}

// serveUntil serves a's console until ctx ends.
func serveUntil(ctx context.Context, a app.App, o RunOptions) error {
	con, err := StartFor(a, o.File, o.Addr, o.Logger)
	if err != nil {
		return err
	}
	defer con.Close()
	fmt.Fprintf(o.Out, "dsh-host ui: the web console of %s is at\n  %s\n", o.File, con.URL())
	if o.Open != nil {
		if err := o.Open(con.URL()); err != nil {
			fmt.Fprintf(o.Out, "dsh-host ui: could not open a browser (%v): open the URL above\n", err)
		}
	}
	<-ctx.Done()
	return nil
}

// StartFor starts the console of a, the host of the composition file:
// with its trail's directory and, unless another console of the
// composition holds it, its approval broker, which it closes with itself
// (every ask still open denied).
func StartFor(a app.App, file, addr string, logger *slog.Logger) (*Console, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := Options{Addr: addr, Logger: logger}
	dir, err := hostrun.AuditDir(file)
	if err != nil {
		logger.Warn("the web console shows no trail", "err", err)
	}
	o.AuditDir = dir
	broker, err := askbroker.Listen(file)
	switch {
	case errors.Is(err, askbroker.ErrInUse):
		o.AsksNote = "another console of this composition (dsh-host ui, or run or serve with --ui) answers them"
	case err != nil:
		o.AsksNote = err.Error()
		logger.Warn("the web console answers no approvals", "err", err)
	default:
		o.Asks = broker
	}
	con, err := Start(a, o)
	if err != nil {
		if broker != nil {
			broker.Close()
		}
		return nil, err
	}
	con.ownAsks = broker != nil
	return con, nil
}

// OpenBrowser opens url with the platform's opener ($BROWSER first),
// only a loopback page.
func OpenBrowser(url string) error {
	if err := browser.WebPage(url); err != nil {
		return err
	}
	return browser.Open(url)
}

// CheckAddr returns an error unless addr is a loopback HOST:PORT the
// console may listen on: --ui's usage check.
func CheckAddr(addr string) error { return loopback(addr) }

// ForHost serves the console of h, the host of the composition file, for
// `run --ui` and `serve --ui`: it writes the URL to out, and stop closes
// it.
func ForHost(h *host.Host, file, addr string, out io.Writer, logger *slog.Logger) (stop func(), err error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	dir, _ := hostrun.AuditDir(file) // StartFor says why when there is none
	con, err := StartFor(&app.Local{Host: h, File: abs, AuditDir: dir}, file, addr, logger)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "web console: %s\n", con.URL())
	return func() { con.Close() }, nil
}
