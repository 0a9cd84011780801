package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// TestChatPrintKeepsAlwaysApproval: an `always` approval saved in
// settings answers the policy's ask under -p as in the console; without
// it, -p without --yes is refused as before.
func TestChatPrintKeepsAlwaysApproval(t *testing.T) {
	srv := openaitest.New(t, countTurns("Counted.")...)
	file := askChat(t, srv)
	home := t.TempDir()
	settings := "policy:\n  allow: [mcp__fx__count]\n"
	if err := os.WriteFile(filepath.Join(home, "settings.yaml"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := dshHostIn(t, home, "chat", "-c", file, "-p", "Count.")
	if code != exitOK || stdout != "Counted.\n" {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	if got := toolResult(t, srv, 1); got != "1" {
		t.Errorf("with mcp__fx__count allowed always, the model read %q, want the count 1", got)
	}
	if strings.Contains(stderr, "pass --yes") {
		t.Errorf("stderr names --yes:\n%s", stderr)
	}
}

// dshHostIn runs the binary to completion with DSH_HOME home.
func dshHostIn(t *testing.T, home string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(t, ctx, args...)
	cmd.Env = append(cmd.Env, "DSH_HOME="+home)
	return runToEnd(t, cmd)
}

// TestChatContinueSkipsAFailedRun: a -p the API refuses keeps its prompt
// in its session, unanswered, and says so; --continue after it goes on
// with the last conversation that has a turn, saying which, not with the
// failed run's empty one.
func TestChatContinueSkipsAFailedRun(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "One."}, openaitest.Turn{Status: 400}, openaitest.Turn{Content: "Three."})
	file := askChat(t, srv)
	home := t.TempDir()
	if code, stdout, stderr := dshHostIn(t, home, "chat", "-c", file, "-p", "First."); code != exitOK || stdout != "One.\n" {
		t.Fatalf("first: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr := dshHostIn(t, home, "chat", "-c", file, "-p", "Second.")
	if code != exitFail || !strings.Contains(stderr, "the prompt is saved, unanswered, in session") {
		t.Fatalf("second: exit %d; stderr:\n%s", code, stderr)
	}
	code, stdout, stderr := dshHostIn(t, home, "chat", "-c", file, "--continue", "-p", "Third.")
	if code != exitOK || stdout != "Three.\n" || !strings.Contains(stderr, "continuing session ") || !strings.Contains(stderr, "First.") {
		t.Fatalf("--continue: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	reqs := srv.Requests()
	msgs, err := reqs[len(reqs)-1].Messages()
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, m := range msgs {
		if m.Role != "system" {
			said = append(said, m.Text())
		}
	}
	if got := strings.Join(said, " | "); got != "First. | One. | Third." {
		t.Errorf("--continue sent %q, want the first run's conversation and the new prompt", got)
	}
}

// TestChatPrintStartupFailureAsJSON: under --output-format json or
// stream-json, a -p whose composition does not load writes the error
// result object on stdout (and the error on stderr); text writes nothing
// on stdout.
func TestChatPrintStartupFailureAsJSON(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yml")
	for _, format := range []string{"json", "stream-json", "text"} {
		code, stdout, stderr := dshHost(t, "chat", "-c", missing, "-p", "hi", "--output-format", format)
		if code != exitFail || !strings.Contains(stderr, "nope.yml") {
			t.Fatalf("%s: exit %d; stderr:\n%s", format, code, stderr)
		}
		if format == "text" {
			if stdout != "" {
				t.Errorf("text: stdout %q", stdout)
			}
			continue
		}
		var r struct {
			Type, Subtype, Error string
			IsError              bool `json:"is_error"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Type != "result" || !r.IsError || !strings.Contains(r.Error, "nope.yml") {
			t.Errorf("%s: stdout %q (%v)", format, stdout, err)
		}
	}
}
