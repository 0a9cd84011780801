package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

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

// readFile is the composition in file, as a command reads it.
func readFile(t *testing.T, file string) *host.Composition {
	t.Helper()
	c, err := loadComposition(file)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startTestHost starts text in-process, with DSH_HOME in a temporary
// directory, and shuts it down when the test ends.
func startTestHost(t *testing.T, text string) *host.Host {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	logger := slog.New(slog.DiscardHandler)
	h, err := startHost(context.Background(), readFile(t, writeComposition(t, text)), &host.Options{Logger: logger}, nil)
	t.Cleanup(func() {
		if !shutdownHost(h, logger) {
			t.Error("shutdown was not clean")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestConsole(t *testing.T) {
	h := startTestHost(t, consoleComposition(t))
	tests := []struct {
		name    string
		input   string
		want    []string
		notWant []string
	}{
		{"help", "/help\n", []string{"/status", "/call <tool> [json]", "/quit", "/mcp "}, nil},
		{"status", "/status\n", []string{"ID ", "hi ", "greeter", "demo ", "mcp-client", "active", "connected", "12 "}, []string{"failed"}},
		{"tools", "/tools\n", []string{"mcp__demo__add ", "folded", "greet ", "native", "mcp_call"}, nil},
		{"prompt", "/prompt\n", []string{`"name": "mcp_list"`, `"name": "greet"`, `"name": "mcp_read_output"`, "4 tools, ", " bytes, ~"}, []string{`"name": "mcp__demo__add"`}},
		{"call", "/call greet {\"name\":\"Ada\"}\n", []string{"Hej, Ada!"}, nil},
		{"call through the server", "/call mcp__demo__add {\"a\":1,\"b\":2}\n", []string{"3"}, []string{"error"}},
		{"call without arguments object", "/call greet [1]\n", []string{"must be a JSON object"}, []string{"Hej"}},
		{"call an unknown tool", "/call nope\n", []string{"error: ", "unknown tool"}, nil},
		{"call without a tool", "/call\n", []string{"usage: /call"}, nil},
		{"a registered command", "/mcp list demo\n", []string{"mcp__demo__add"}, []string{"error: "}},
		{"an unknown command", "/nope\n", []string{"error: "}, nil},
		{"not a command", "hello\n", []string{"/help lists them"}, nil},
		{"reload", "/reload\n", []string{"reloading"}, nil},
		{"blank lines are ignored", "\n\n  \n", nil, []string{"/help"}},
		{"quit stops reading", "/quit\n/status\n", []string{"bye"}, []string{"ID "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			runConsole(context.Background(), h, strings.NewReader(tt.input), &out)
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q", w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}

// TestConsoleStopsWithContext ends the console when its context ends, while
// stdin stays open (as a terminal does on SIGINT).
func TestConsoleStopsWithContext(t *testing.T) {
	h := startTestHost(t, greeterComposition)
	pr, pw := io.Pipe()
	defer pw.Close() // lets the line reader go
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		runConsole(ctx, h, pr, &out)
	}()
	// The write returns once the console has read the line.
	if _, err := io.WriteString(pw, "/call greet {\"name\":\"Bo\"}\n"); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if strings.Contains(out.String(), "bye") {
		t.Errorf("output %q: the console quit as if told to", out.String())
	}
}

// TestProgress shows one line per instance as the composition starts, then
// a summary.
func TestProgress(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	c := readFile(t, writeComposition(t, consoleComposition(t)))
	logger := slog.New(slog.DiscardHandler)
	var out bytes.Buffer
	p := newProgress(&out)
	h, err := startHost(context.Background(), c, &host.Options{Logger: logger}, p.observe)
	defer shutdownHost(h, logger)
	if err != nil {
		t.Fatal(err)
	}
	p.finish(h.Status(), " — /help for commands")

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
