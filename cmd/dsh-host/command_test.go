package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
)

// test-echo registers /echo, which replies with its input, and /refuse,
// which replies with an error; neither reply ends in a newline.
func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "test-echo",
		Inject: []host.Dep{host.Require(commands.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			reg := host.Get(s, commands.Key)
			if _, err := reg.Register(s, commands.Command{Name: "echo", Handler: func(_ context.Context, inv commands.Invocation) commands.Reply {
				return commands.Reply{Text: inv.Input}
			}}); err != nil {
				return err
			}
			_, err := reg.Register(s, commands.Command{Name: "refuse", Handler: func(_ context.Context, inv commands.Invocation) commands.Reply {
				return commands.Reply{Text: "refused " + inv.Input, Error: true}
			}})
			return err
		},
	})
}

// TestCommandReplyEndsLine pins that `dsh-host command` ends its reply with
// a newline, so that whatever the shell prints next starts on a line of its
// own, and sends an error reply to stderr with exit 1.
func TestCommandReplyEndsLine(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: echo, name: test-echo}\n")
	tests := []struct {
		line                string
		wantCode            int
		wantStdout, wantErr string
	}{
		{"/echo hello", exitOK, "hello\n", ""},
		{"echo two\nlines\n", exitOK, "two\nlines\n", ""},
		{"/refuse this", exitFail, "", "refused this\n"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runIn(t, "", "command", "-c", file, "--log-level", "error", tt.line)
		if diff := cmp.Diff([]any{tt.wantCode, tt.wantStdout, tt.wantErr}, []any{code, stdout, stderr}); diff != "" {
			t.Errorf("command %q: exit, stdout, stderr (-want +got):\n%s", tt.line, diff)
		}
	}
}
