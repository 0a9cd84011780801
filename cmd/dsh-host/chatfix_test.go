package main

import (
	"context"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(t, ctx, "chat", "-c", file, "-p", "Count.")
	cmd.Env = append(cmd.Env, "DSH_HOME="+home)
	code, stdout, stderr := runToEnd(t, cmd)
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
