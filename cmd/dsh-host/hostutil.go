package main

// Helpers every subcommand that starts a host shares (run, tools, call,
// prompt, command, serve).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/lmittmann/tint"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/termsafe"
)

// shutdownTimeout bounds Host.Shutdown when a subcommand ends. The host
// already bounds each instance's dispose; this is the backstop for the whole.
const shutdownTimeout = 30 * time.Second

// loadComposition is how every subcommand reads its composition: file and
// the files it includes, once. The command goes on with what it read, so a
// file that can be read only once (a pipe: dsh-host chat -c <(...)) works
// as a regular file does. On error the composition holds what parsed, as
// host.ReadComposition's does, and the error says what to do when the file
// is missing.
func loadComposition(file string) (*host.Composition, error) {
	c, err := host.ReadComposition(file, nil)
	if err != nil {
		return c, explainLoadError(file, err)
	}
	return c, nil
}

// startHost is how every subcommand starts a host: it creates one with
// opts, applies c (loadComposition's) and returns once every instance has
// settled (active, failed or pending) or ctx ends. observe, if not nil,
// sees every status change from the first; each setup runs on the
// new host before anything starts.
//
// The host is returned whatever the error, and the caller shuts it down:
// instances still starting when ctx ends go on in the background until
// then. An instance that failed is in Status, not in the error; the error is
// ctx's.
func startHost(ctx context.Context, c *host.Composition, opts *host.Options, observe func(host.InstanceStatus), setup ...func(*host.Host)) (*host.Host, error) {
	h := host.New(opts)
	if observe != nil {
		h.OnStatus(observe)
	}
	for _, fn := range setup {
		fn(h)
	}
	return h, h.Update(ctx, c)
}

// hangups catches SIGHUP until signal.Stop(hup). run and serve call it
// before the composition starts: a SIGHUP that comes meanwhile is then a
// reload once it has (follow), not SIGHUP's default, which kills the
// process without disposing anything.
func hangups() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}

// follow keeps h in step with file until the returned stop is called: it
// watches the file, and reloads it on each signal from hup (hangups).
// stop returns once both have ended. run and serve share it.
func follow(ctx context.Context, h *host.Host, file string, hup <-chan os.Signal, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if fi, err := os.Stat(file); err == nil && !fi.Mode().IsRegular() {
		// A pipe gave its content to loadComposition and has no more:
		// reading it again would find it empty, or wait for a writer
		// that never comes.
		logger.Warn("the composition is not a regular file (a pipe?): it was read once, and is not followed; edits and SIGHUP reload nothing", "file", file)
	} else {
		wg.Go(func() {
			// Watch reads the file once more as it begins, so that an
			// edit made since the command read it is not missed (it
			// applies nothing when there is none), then follows it.
			if err := h.Watch(ctx, file); err != nil && ctx.Err() == nil {
				logger.Error("the composition is no longer watched; edits are not applied until restart", "file", file, "err", err)
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				logger.Info("SIGHUP: reloading", "file", file)
				h.Reload()
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// explainLoadError adds what to do to the error of loading file when the
// file is missing.
func explainLoadError(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w\n(pass the composition with -c FILE; to start one from a Claude Code, Cursor or VS Code config, run: dsh-host import .mcp.json --write -c %s)", err, file)
	}
	return err
}

// shutdownHost disposes every instance of h, bounded by shutdownTimeout, and
// logs a dispose that did not finish. It reports whether shutdown was clean.
func shutdownHost(h *host.Host, logger *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		logger.Error("shutdown was not clean", "err", err)
		return false
	}
	return true
}

// newLogger returns a logger writing to w in format ("text" or "json") at
// level ("debug", "info", "warn", "error"), as the log flags allow them.
// Text on a terminal is rendered by tint, in colour, with every message and
// value escaped (termsafe.Handler): a server's stderr line or error is
// shown, not executed. JSON, and text to a file or pipe, are slog's own.
func newLogger(w io.Writer, format, level string) *slog.Logger {
	return newTermLogger(w, format, level, isTerminal(w))
}

// newTermLogger is newLogger with the terminal decision made by the caller.
func newTermLogger(w io.Writer, format, level string, terminal bool) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
	}
	if terminal {
		return slog.New(termsafe.NewHandler(tint.NewHandler(w, &tint.Options{Level: lv, TimeFormat: time.TimeOnly})))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}))
}

// isTerminal reports whether v is an *os.File open on a terminal.
func isTerminal(v any) bool { return console.IsTerminal(v) }
