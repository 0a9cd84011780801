//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/serve"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// pipeComposition returns a named pipe that gives text to the first
// reader and nothing to every later one, as the shell's <(printf ...)
// does: a command that reads its composition twice finds it empty the
// second time.
func pipeComposition(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "composition.yml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for first := true; ; first = false {
			w, err := os.OpenFile(path, os.O_WRONLY, 0) // waits for a reader
			if err != nil {
				return
			}
			select {
			case <-stop:
				w.Close()
				return
			default:
			}
			if first {
				w.WriteString(text)
			}
			w.Close()
		}
	}()
	t.Cleanup(func() {
		close(stop)
		// A reader lets the writer's open return, to see stop.
		r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		<-done
		if err == nil {
			r.Close()
		}
	})
	return path
}

// TestCompositionFromAPipe: every command reads its composition once, so
// one given as a pipe (dsh-host chat -c <(printf ...)) works as a file
// does; run and serve, which cannot follow a pipe, run what they read.
func TestCompositionFromAPipe(t *testing.T) {
	t.Run("check", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "check", "-c", pipeComposition(t, greeterComposition))
		if code != exitOK || !strings.Contains(stdout, "ok, 1 entries") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
		}
	})
	t.Run("tools", func(t *testing.T) {
		code, stdout, stderr := dshHost(t, "tools", "--no-attach", "-c", pipeComposition(t, greeterComposition))
		if code != exitOK || !strings.Contains(stdout, "greet") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
		}
	})
	t.Run("chat", func(t *testing.T) {
		srv := openaitest.New(t, chatTurns()...)
		file, _ := chatComposition(t, srv)
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := dshHost(t, "chat", "-c", pipeComposition(t, string(text)), "-p", "What is 1+2?")
		if code != exitOK || stdout != "The sum is 3.\n" {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
		}
	})
	for _, args := range [][]string{
		{"run", "--console", "off"},
		{"serve", "--http", "127.0.0.1:0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			file := pipeComposition(t, greeterComposition)
			cmd := command(t, ctx, append(args, "--log-format", "json", "-c", file)...)
			logs := startLogging(t, cmd)
			ready := msg("running; SIGHUP reloads, SIGINT or SIGTERM stops")
			if args[0] == "serve" {
				ready = msg("serving MCP over Streamable HTTP", "entry", serve.GatewayID)
			}
			waitLog(t, logs, "the start", ready)
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			var notApplied []string
			for m := range logs {
				if m["msg"] == "composition not applied; the running instances are unchanged" {
					notApplied = append(notApplied, m["err"].(string))
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s after SIGINT: %v, want exit 0", args[0], err)
			}
			if len(notApplied) > 0 {
				t.Errorf("the pipe was read again, and found wanting: %q", notApplied)
			}
		})
	}
}
