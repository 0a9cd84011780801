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

// TestChatWorkspaceAnywhere: in a directory with no composition, chat
// runs the user's $DSH_HOME/chat.yml; the model reads the directory's
// AGENTS.md in its system text and the workspace's files without a
// question; its edit under -p is refused without --yes (the file
// untouched) and made with it.
func TestChatWorkspaceAnywhere(t *testing.T) {
	for _, yes := range []bool{false, true} {
		srv := openaitest.New(t,
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"notes.txt"}`}}},
			openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c2", Name: "edit", Arguments: `{"path":"notes.txt","old_string":"alpha","new_string":"beta"}`}}},
			openaitest.Turn{Content: "Done."},
		)
		home, work := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "chat.yml"), []byte(`plugins:
  - id: workspace
    name: workspace
  - id: agent
    name: agent
    config:
      baseUrl: `+srv.URL+`
      apiKeyEnv: CHAT_TEST_KEY
`), 0o644); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{"notes.txt": "alpha\n", "AGENTS.md": "Keep notes short."} {
			if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		args := []string{"chat", "-p", "fix the notes"}
		if yes {
			args = append(args, "--yes")
		}
		cmd := command(t, ctx, args...)
		cmd.Env = append(cmd.Env, "DSH_HOME="+home, "CHAT_TEST_KEY=sk-test")
		cmd.Dir = work
		code, stdout, stderr := runToEnd(t, cmd)
		cancel()
		if code != exitOK || !strings.Contains(stdout, "Done.") {
			t.Fatalf("--yes=%v: exit %d, stdout %q; stderr:\n%s", yes, code, stdout, stderr)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3", len(reqs))
		}
		msgs, err := reqs[2].Messages()
		if err != nil {
			t.Fatal(err)
		}
		if sys := msgs[0].Text(); !strings.Contains(sys, "Keep notes short.") || !strings.Contains(sys, "Working directory: ") {
			t.Errorf("system text: %q", sys)
		}
		var results []string
		for _, m := range msgs {
			if m.Role == "tool" {
				results = append(results, m.Text())
			}
		}
		got, _ := os.ReadFile(filepath.Join(work, "notes.txt"))
		switch {
		case len(results) != 2 || !strings.Contains(results[0], "alpha"):
			t.Errorf("tool results %q, want read's text first", results)
		case !yes && (!strings.Contains(results[1], "--yes") || string(got) != "alpha\n"):
			t.Errorf("without --yes: edit answered %q, file %q; want a refusal and the file untouched", results[1], got)
		case yes && string(got) != "beta\n":
			t.Errorf("with --yes: file %q (edit answered %q)", got, results[1])
		}
	}
}
