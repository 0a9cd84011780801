package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/google/go-cmp/cmp"
)

// test-block's Apply waits until its scope is cancelled, as a server that
// never finishes connecting would.
func init() {
	host.Register(host.Definition[struct{}]{
		Name: "test-block",
		Apply: func(s *host.Scope, _ struct{}) error {
			<-s.Context().Done()
			return s.Context().Err()
		},
	})
}

// TestRunInterruptedWhileStarting: SIGINT (here, run's context ending)
// while an instance is still starting is a clean stop, exit 0, and does
// not wait for the instance to finish starting.
func TestRunInterruptedWhileStarting(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: block, name: test-block}\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	started := make(chan struct{})
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), ": block…") {
				close(started)
			}
		}
	}()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- dispatch(ctx, []string{"run", "-c", file, "--console", "off"}, Stdio{In: strings.NewReader(""), Out: pw, Err: &stderr})
		pw.Close()
	}()
	select {
	case <-started:
	case c := <-code:
		t.Fatalf("run ended (exit %d) before the instance started:\n%s", c, stderr.String())
	}
	cancel()
	if c := <-code; c != exitOK {
		t.Errorf("exit %d, want 0\nstderr:\n%s", c, stderr.String())
	}
	<-read
	if !strings.Contains(stderr.String(), "shut down cleanly") || strings.Contains(stderr.String(), "dsh-host run:") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// TestServeStoppedWhileStarting: serve, like run, treats a stop that comes
// while the composition is starting as a clean stop.
func TestServeStoppedWhileStarting(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: block, name: test-block}\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := dispatch(ctx, []string{"serve", "--stdio", "-c", file}, Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	if code != exitOK || stdout.Len() != 0 {
		t.Errorf("exit %d, stdout %q; want 0 and nothing on stdout\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// TestRunProgressCountsOnlyEagerServers: run's "connecting n/N" lines
// count the servers that connect at start; a lazy one starts on its first
// call, so it has no line and is not in N.
func TestRunProgressCountsOnlyEagerServers(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	fixture := mcptest.FixtureBinary(t)
	file := writeComposition(t, fmt.Sprintf(`plugins:
  - id: eager
    name: mcp-client
    config: {serverName: eager, transport: stdio, command: %[1]q}
  - id: later
    name: mcp-client
    config: {serverName: later, transport: stdio, command: %[1]q, startup: lazy}
  - id: alsolater
    name: mcp-client
    config: {serverName: alsolater, transport: stdio, command: %[1]q, startup: lazy}
`, fixture))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var lines []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "ready:") {
				cancel()
			}
		}
	}()
	var stderr bytes.Buffer
	code := dispatch(ctx, []string{"run", "-c", file, "--console", "off", "--log-level", "warn"}, Stdio{In: strings.NewReader(""), Out: pw, Err: &stderr})
	pw.Close()
	<-read
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, strings.Join(lines, "\n"), stderr.String())
	}
	var progress []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "ready:") {
			progress = append(progress, l)
		}
	}
	if diff := cmp.Diff([]string{"connecting 1/1: eager…"}, progress); diff != "" {
		t.Errorf("progress lines (-want +got):\n%s", diff)
	}
}
