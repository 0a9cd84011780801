// Package hostrun is how a command runs a composition in its own
// process: it reads the composition (Load), keeps a host in step with it
// (Follow), shuts it down bounded (Shutdown), makes the command's logger
// and says why the host is not serving a call (NotRunning, ProblemLines).
// cmd/dsh-host's subcommands share it; a second front end would too.
package hostrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lmittmann/tint"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/termsafe"
)

// ShutdownTimeout bounds Host.Shutdown when a subcommand ends. The host
// already bounds each instance's dispose; this is the backstop for the whole.
const ShutdownTimeout = 30 * time.Second

// Load is how every subcommand reads its composition: file and
// the files it includes, once. The command goes on with what it read, so a
// file that can be read only once (a pipe: dsh-host chat -c <(...)) works
// as a regular file does. On error the composition holds what parsed, as
// host.ReadComposition's does, and the error says what to do when the file
// is missing.
func Load(file string) (*host.Composition, error) {
	c, err := host.ReadComposition(file, nil)
	if err != nil {
		return c, ExplainLoadError(file, err)
	}
	return c, nil
}

// Follow keeps h in step with file until the returned stop is called: it
// watches the file, and reloads it on each signal from hup (hangups).
// stop returns once both have ended. run and serve share it.
func Follow(ctx context.Context, h *host.Host, file string, hup <-chan os.Signal, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if fi, err := os.Stat(file); err == nil && !fi.Mode().IsRegular() {
		// A pipe gave its content to Load and has no more:
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

// ExplainLoadError adds what to do to the error of loading file when the
// file is missing.
func ExplainLoadError(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w\n(pass the composition with -c FILE; to start one from a Claude Code, Cursor or VS Code config, run: dsh-host import .mcp.json --write -c %s)", err, file)
	}
	return err
}

// Shutdown disposes every instance of h, bounded by ShutdownTimeout, and
// logs a dispose that did not finish. It reports whether shutdown was clean.
func Shutdown(h *host.Host, logger *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		logger.Error("shutdown was not clean", "err", err)
		return false
	}
	return true
}

// NewLogger returns a logger writing to w in format ("text" or "json") at
// level ("debug", "info", "warn", "error"), as the log flags allow them.
// Text on a terminal is rendered by tint, in colour, with every message and
// value escaped (termsafe.Handler): a server's stderr line or error is
// shown, not executed. JSON, and text to a file or pipe, are slog's own.
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	return NewTermLogger(w, format, level, console.IsTerminal(w))
}

// NewTermLogger is NewLogger with the terminal decision made by the caller.
func NewTermLogger(w io.Writer, format, level string, terminal bool) *slog.Logger {
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

// ProblemLines flattens err into one line per problem: the errors joined
// in it (errors.Join, recursively), each on its own line, with any further
// lines of one problem indented under it.
func ProblemLines(err error) []string {
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		parts := multi.Unwrap()
		msgs := make([]string, len(parts))
		for i, e := range parts {
			msgs[i] = e.Error()
		}
		// Only a plain join: an error that wraps several with text of
		// its own stays one problem.
		if strings.Join(msgs, "\n") == err.Error() {
			var out []string
			for _, e := range parts {
				out = append(out, ProblemLines(e)...)
			}
			return out
		}
	}
	return []string{strings.ReplaceAll(err.Error(), "\n", "\n    ")}
}

// Hangups catches SIGHUP until signal.Stop(hup). run and serve call it
// before the composition starts: a SIGHUP that comes meanwhile is then a
// reload once it has (Follow), not SIGHUP's default, which kills the
// process without disposing anything.
func Hangups() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}
