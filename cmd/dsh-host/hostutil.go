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
	"time"

	"github.com/lmittmann/tint"

	"github.com/dsh-host/dsh-host/host"
)

// shutdownTimeout bounds Host.Shutdown when a subcommand ends. The host
// already bounds each instance's dispose; this is the backstop for the whole.
const shutdownTimeout = 30 * time.Second

// startHost reads, validates and applies the composition in file and returns
// the running host. Apply returns once every instance has settled (active,
// failed or pending); an instance that failed is in Status, not in the error.
// On error nothing is left running.
func startHost(ctx context.Context, file string, logger *slog.Logger) (*host.Host, error) {
	h := host.New(&host.Options{Logger: logger})
	if err := h.LoadFile(ctx, file); err != nil {
		shutdownHost(h, logger)
		return nil, explainLoadError(file, err)
	}
	return h, nil
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
// Text on a terminal is rendered by tint, in colour.
func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
	}
	if isTerminal(w) {
		return slog.New(tint.NewHandler(w, &tint.Options{Level: lv, TimeFormat: time.TimeOnly}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv}))
}

// isTerminal reports whether v is an *os.File open on a terminal. A character
// device is not enough: /dev/null is one too.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && isTerminalFd(f.Fd())
}
