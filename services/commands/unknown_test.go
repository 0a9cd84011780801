package commands_test

import (
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func init() {
	// A command this plugin would register, declared as its claim.
	host.Register(host.Definition[struct{}]{
		Name:   "test-claims-a-command",
		Claims: func(*struct{}) []host.Claim { return []host.Claim{{Kind: "command", Value: "deploy"}} },
		Apply:  func(*host.Scope, struct{}) error { panic("no way") },
	})
}

// TestUnknownCommandNamesTheInstance: the command of an instance that
// failed is unknown, and the reply says which instance and why, as a
// call of its tool does: the one whose id is the command's name, or the
// one claiming the command; a name nobody would register says only that.
func TestUnknownCommandNamesTheInstance(t *testing.T) {
	h := hosttest.Start(t, `plugins:
  - {id: clock, name: test-fails-after-registering, config: {fail: true}}
  - {id: ops, name: test-claims-a-command}
`)
	for line, want := range map[string]string{
		"/clock UTC": `unknown command /clock: instance "clock" (test-fails-after-registering) failed: the new config is wrong — known commands: `,
		"/deploy":    `unknown command /deploy: instance "ops" (test-claims-a-command) failed: apply panicked: no way (the log has the stack) — known commands: `,
		"/nobody":    `unknown command /nobody — known commands: `,
	} {
		got := h.Command(line)
		if !got.Error || len(got.Text) < len(want) || got.Text[:len(want)] != want {
			t.Errorf("%s = %+v, want an error starting %q", line, got, want)
		}
	}
	// Outside a host the registry knows no instances.
	if got := commands.New().Run(t.Context(), tools.Caller{}, "/clock"); got.Text != "unknown command /clock — no commands are registered" {
		t.Errorf("a registry of no host: %q", got.Text)
	}
}
