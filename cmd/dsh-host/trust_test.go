package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/policy/pins"
)

// cliInput is cliIn with input on the binary's stdin.
func cliInput(t *testing.T, home, input string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "DSH_HOME="+home)
	cmd.Stdin = strings.NewReader(input)
	return runToEnd(t, cmd)
}

// TestTrustAttached: a tool its server rewrites is held by the running
// host; `dsh-host trust` reaches that host, prints the diff (escaped,
// invisible text flagged) and asks; "n" approves nothing; a digest printed
// before the server changed the tool again approves nothing and says so;
// "y" approves what was shown, --yes too, without asking.
func TestTrustAttached(t *testing.T) {
	home := attachHome(t)
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-rewrite]
`, mcptest.FixtureBinary(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	run, _ := startHostIn(t, home, file)
	attached := attachedTo(run)
	call := func(args ...string) (int, string, string) {
		return cliIn(t, home, append([]string{"call", "-c", file}, args...)...)
	}
	trust := func(input string, args ...string) (int, string, string) {
		return cliInput(t, home, input, append([]string{"trust", "-c", file}, args...)...)
	}
	rewriteTo := func(desc string) {
		t.Helper()
		args, _ := json.Marshal(map[string]string{"name": "ping", "description": desc})
		if code, out, errs := call("mcp__fx__rewrite-tool", string(args)); code != exitOK {
			t.Fatalf("rewrite: exit %d, %q, %q", code, out, errs)
		}
	}
	// waitReview waits until trust's review shows want, and returns it.
	waitReview := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, out, errs := trust("", "fx", "ping")
			if code == exitFail && strings.Contains(out, want) && strings.Contains(errs, "trust: not approved") {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("the review does not show %q: exit %d, %q, %q", want, code, out, errs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if code, out, errs := call("mcp__fx__ping"); code != exitOK || out != "pong\n" {
		t.Fatalf("ping on first use: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs := trust("", "fx"); code != exitOK || !strings.Contains(out, "nothing to approve") || strings.Contains(errs, "Approve") {
		t.Errorf("trust with nothing changed: exit %d, %q, %q; want nothing asked", code, out, errs)
	}

	rewriteTo("Changed.")
	waitReview(`+ "Changed."`)
	code, out, errs := trust("n\n", "fx", "ping")
	shown, ok := pins.ReviewDigest(out)
	if code != exitFail || !ok || !strings.Contains(errs, "Approve these definitions? [y/N]") || !strings.Contains(errs, "not approved") {
		t.Fatalf("trust answered n: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, _ := call("mcp__fx__ping"); code != exitFail {
		t.Fatal("ping is offered after trust was answered n")
	}

	// An interrupt while trust asks ends it, approving nothing, without
	// waiting for a line that does not come.
	interruptAtQuestion(t, home, file)
	if code, _, _ := call("mcp__fx__ping"); code != exitFail {
		t.Fatal("ping is offered after trust was interrupted")
	}

	// The server changes ping after the diff was printed: the digest of
	// what was shown approves nothing. Control characters and invisible
	// text in the new description are shown escaped and flagged.
	rewriteTo("Again.\x1b[2J\u200b")
	out = waitReview(`+ "Again.\x1b[2J\u200b"`)
	if strings.Contains(out, "\x1b") || !strings.Contains(out, "the description hides text a model reads: 1 invisible character(s) (U+200B)") {
		t.Errorf("the review prints a raw escape or does not flag the invisible character:\n%q", out)
	}
	if code, out, errs := trust("", "fx", "ping", "--digest", shown); code != exitFail || !strings.Contains(errs, "changed after they were shown") || !strings.Contains(errs, "nothing was approved") {
		t.Fatalf("trust --digest of an earlier review: exit %d, %q, %q", code, out, errs)
	}
	if code, _, _ := call("mcp__fx__ping"); code != exitFail {
		t.Fatal("ping is offered after a digest of another definition")
	}
	code, out, errs = trust("y\n", "fx", "ping")
	if code != exitOK || !strings.Contains(out, `+ "Again.\x1b[2J\u200b"`) || !strings.HasSuffix(out, "trusted and offered again: mcp__fx__ping\n") || !strings.Contains(errs, attached) {
		t.Fatalf("trust answered y: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := call("mcp__fx__ping"); code != exitOK || out != "rewritten ping\n" {
		t.Errorf("ping after trust: exit %d, %q, %q", code, out, errs)
	}

	rewriteTo("Third.")
	out = waitReview(`+ "Third."`)
	digest, _ := pins.ReviewDigest(out)
	if code, out, errs := trust("", "fx", "--yes"); code != exitOK || strings.Contains(errs, "Approve") || !strings.HasSuffix(out, "trusted and offered again: mcp__fx__ping\n") {
		t.Errorf("trust --yes: exit %d, %q, %q", code, out, errs)
	}
	rewriteTo("Fourth.")
	out = waitReview(`+ "Fourth."`)
	digest, _ = pins.ReviewDigest(out)
	if code, out, errs := trust("", "fx", "ping", "--digest", digest); code != exitOK || out != "trusted and offered again: mcp__fx__ping\n" {
		t.Errorf("trust --digest: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs := call("mcp__fx__ping"); code != exitOK || out != "rewritten ping\n" {
		t.Errorf("ping after trust --digest: exit %d, %q, %q", code, out, errs)
	}
	// A host of its own (--no-attach) starts the server over, with its
	// original ping: a change from the approved Fourth., shown and approved
	// with --yes in that host, for the pins both hosts share.
	if code, out, errs := trust("", "fx", "ping", "--no-attach"); code != exitFail || !strings.Contains(out, `- "Fourth."`) || !strings.Contains(errs, "not approved") {
		t.Errorf("trust --no-attach: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs := trust("", "fx", "ping", "--no-attach", "--yes"); code != exitOK || !strings.HasSuffix(out, "trusted and offered again: mcp__fx__ping\n") || strings.Contains(errs, attached) {
		t.Errorf("trust --no-attach --yes: exit %d, %q, %q", code, out, errs)
	}
	if code, _, errs := trust("", "nosuch"); code != exitFail || !strings.Contains(errs, `no tool of server "nosuch" is registered`) {
		t.Errorf("trust of an unknown server: exit %d, stderr %q", code, errs)
	}
	if code, _, _ := trust("", "fx", "--yes", "--digest", digest); code != exitUsage {
		t.Errorf("trust --yes --digest: exit %d, want a usage error", code)
	}
}

// interruptAtQuestion runs `trust fx ping` with a stdin that stays open,
// interrupts it once it asks, and checks that it ends approving nothing.
func interruptAtQuestion(t *testing.T, home, file string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "trust", "-c", file, "fx", "ping")
	cmd.Env = append(os.Environ(), "DSH_HOME="+home)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errs strings.Builder
	asked := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		once := false
		for {
			n, err := stderr.Read(buf)
			errs.Write(buf[:n])
			if !once && strings.Contains(errs.String(), "[y/N]") {
				once = true
				close(asked)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-asked:
	case <-readDone:
		t.Fatalf("trust ended before it asked: %q", errs.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-readDone
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("trust did not end on the interrupt: %q", errs.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFail || !strings.Contains(errs.String(), "not approved") {
		t.Fatalf("trust interrupted: %v, stderr %q; want exit 1, not approved", err, errs.String())
	}
}
