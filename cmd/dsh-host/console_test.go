package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
)

// readFile is the composition in file, as a command reads it.
func readFile(t *testing.T, file string) *host.Composition {
	t.Helper()
	c, err := hostrun.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runConsole runs the console without a terminal and without hooks.
func runConsole(ctx context.Context, h *host.Host, in io.Reader, out io.Writer) {
	console.Run(ctx, &app.Local{Host: h}, in, out, nil, console.Hooks{})
}

// startTestHost starts text in-process, with DSH_HOME in a temporary
// directory, and shuts it down when the test ends.
func startTestHost(t *testing.T, text string) *host.Host {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	logger := slog.New(slog.DiscardHandler)
	h, err := hostrun.Start(context.Background(), readFile(t, writeComposition(t, text)), &host.Options{Logger: logger}, nil)
	t.Cleanup(func() {
		if !hostrun.Shutdown(h, logger) {
			t.Error("shutdown was not clean")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
