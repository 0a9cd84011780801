package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
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
