package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
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

// consoleComposition is the greeter, the fixture server and folding.
func consoleComposition(t *testing.T) string {
	return fmt.Sprintf(`plugins:
  - id: hi
    name: greeter
    config:
      greeting: Hej
  - id: demo
    name: mcp-client
    config:
      serverName: demo
      transport: stdio
      command: %q
  - id: fold
    name: mcp-fold
`, mcptest.FixtureBinary(t))
}

// startTestHost starts text in-process, with DSH_HOME in a temporary
// directory, and shuts it down when the test ends.
func startTestHost(t *testing.T, text string) *host.Host {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	logger := slog.New(slog.DiscardHandler)
	h, err := startHost(context.Background(), readFile(t, writeComposition(t, text)), &host.Options{Logger: logger}, nil)
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

// TestProgress shows one line per instance as the composition starts, then
// a summary.
func TestProgress(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	c := readFile(t, writeComposition(t, consoleComposition(t)))
	logger := slog.New(slog.DiscardHandler)
	var out bytes.Buffer
	p := console.NewStartup(&out)
	h, err := startHost(context.Background(), c, &host.Options{Logger: logger}, p.Observe)
	defer hostrun.Shutdown(h, logger)
	if err != nil {
		t.Fatal(err)
	}
	p.Finish(h.Status(), " — /help for commands")

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// One line per entry (the built-in services are left out), then the
	// summary of every instance, the built-in ones included.
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got:\n%s", out.String())
	}
	for i, l := range lines[:3] {
		if !strings.Contains(l, fmt.Sprintf(" %d/3: ", i+1)) {
			t.Errorf("line %d = %q", i+1, l)
		}
	}
	if !strings.Contains(out.String(), "connecting ") || !strings.Contains(out.String(), ": demo…") {
		t.Errorf("no connecting line for demo:\n%s", out.String())
	}
	if want := fmt.Sprintf("ready: %d active — /help for commands", 3+builtins()); lines[3] != want {
		t.Errorf("summary = %q", lines[3])
	}
}
