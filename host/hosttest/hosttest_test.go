package hosttest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) { leaks.VerifyTestMain(m) }

type echoArgs struct {
	Text string `json:"text"`
}

// live counts the echo instances running, so that a test sees Start's
// cleanup dispose them.
var live atomic.Int32

func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "hosttest-echo",
		Inject: []host.Dep{host.Require(tools.Key), host.Optional(commands.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			live.Add(1)
			s.OnDispose("count", func() error { live.Add(-1); return nil })
			if cmds, ok := host.Lookup(s, commands.Key); ok {
				if _, err := cmds.Register(s, commands.Command{Name: s.ID(), Handler: commands.Func(func(_ context.Context, in string) (string, error) { return in, nil })}); err != nil {
					return err
				}
			}
			_, err := host.Get(s, tools.Key).Register(s, tools.Func(s.ID(), "Echo the text.",
				func(_ context.Context, in echoArgs) (any, error) { return in.Text, nil }))
			return err
		},
	})
}

type flakyConfig struct {
	Fail bool `yaml:"fail"`
	Max  int  `yaml:"max"`
}

func init() {
	host.Register(host.Definition[flakyConfig]{
		Name: "hosttest-flaky",
		Validate: func(c *flakyConfig) error {
			if c.Max < 0 {
				return host.KeyErrorf("max", "%d is negative", c.Max)
			}
			return nil
		},
		Apply: func(_ *host.Scope, c flakyConfig) error {
			if c.Fail {
				return errors.New("told to fail")
			}
			return nil
		},
	})
}

const echo = "plugins:\n  - {id: echo, name: hosttest-echo}\n"

// TestStart: the host runs the composition with the built-in services, a
// call goes through the registry and a command through the commands
// service, $DSH_HOME is a fresh directory holding the settings given, and
// the host is shut down when the test ends.
func TestStart(t *testing.T) {
	t.Run("run", func(t *testing.T) {
		h := hosttest.Start(t, echo, hosttest.Settings("clock: {layout: MST}\n"))
		if res := h.Call("echo", `{"text":"hi"}`); res.Err != nil || hosttest.Text(res) != "hi" {
			t.Errorf("Call = %+v, want hi", res)
		}
		if res := h.Call("echo", ""); res.Err == nil || hosttest.Text(res) != "Error: "+res.Err.Error() {
			t.Errorf("Call without the required text = %+v, want a tool error", res)
		}
		if got := h.Command("/echo hej"); got != (commands.Reply{Text: "hej"}) {
			t.Errorf("Command = %+v", got)
		}
		b, err := os.ReadFile(filepath.Join(os.Getenv("DSH_HOME"), "settings.yaml"))
		if err != nil || string(b) != "clock: {layout: MST}\n" {
			t.Errorf("settings.yaml = %q, %v", b, err)
		}
		if st := host.Find(h.Status(), "settings"); st.State != host.StateActive {
			t.Errorf("the settings service: %+v", st)
		}
		if n := live.Load(); n != 1 {
			t.Errorf("%d echo instances running, want 1", n)
		}
	})
	if n := live.Load(); n != 0 {
		t.Errorf("%d echo instances running after the test ended, want 0", n)
	}
}

// TestWait: Wait returns once the instance reaches the state, here after
// an update running beside it disables the instance.
func TestWait(t *testing.T) {
	h := hosttest.Start(t, echo)
	c, err := host.ParseComposition("composition.yml", []byte("plugins:\n  - {id: echo, name: hosttest-echo, disabled: true}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Update(context.Background(), c) }()
	if st := h.Wait("echo", host.StateDisabled); st.State != host.StateDisabled {
		t.Errorf("Wait returned %+v", st)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res := h.Call("echo", `{"text":"hi"}`); res.Err == nil {
		t.Errorf("a disabled instance's tool answered %+v", res)
	}
}

// TestApply: a changed composition restarts the instance under its new id.
func TestApply(t *testing.T) {
	h := hosttest.Start(t, echo)
	h.Apply("plugins:\n  - {id: echo2, name: hosttest-echo}\n")
	if res := h.Call("echo2", `{"text":"hi"}`); res.Err != nil || hosttest.Text(res) != "hi" {
		t.Errorf("echo2 = %+v", res)
	}
	if res := h.Call("echo", `{"text":"hi"}`); res.Err == nil {
		t.Errorf("the removed entry's tool answered %+v", res)
	}
}

// TestApplyReports: Apply returns what the reload did to each entry it
// touched, with the errors, so that a test checks it rather than the log.
func TestApplyReports(t *testing.T) {
	h := hosttest.Start(t, echo+"  - {id: f, name: hosttest-flaky}\n")
	got := h.Apply(`plugins:
  - {id: echo2, name: hosttest-echo}
  - {id: f, name: hosttest-flaky, config: {fail: true}}
  - {id: bad, name: hosttest-flaky, config: {fail: true}}
`)
	want := []host.Outcome{
		{ID: "echo2", Result: "started", Why: "new entry in composition.yml"},
		{ID: "bad", Result: "failed", Why: "told to fail"},
		{ID: "f", Result: "kept", Why: "kept the previous config: the new one failed: told to fail"},
		{ID: "echo", Result: "disposed", Why: "entry removed"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Apply (-want +got):\n%s", diff)
	}
	if got := h.Apply(`plugins:
  - {id: echo2, name: hosttest-echo}
  - {id: f, name: hosttest-flaky, config: {fail: true}}
  - {id: bad, name: hosttest-flaky, config: {fail: true}}
`); len(got) != 0 {
		t.Errorf("Apply of the same composition = %+v, want nothing touched", got)
	}
}

// TestCheck: Check lists a composition's problems without starting it;
// CheckKey asserts one at a key's line.
func TestCheck(t *testing.T) {
	got := hosttest.Check(t, "plugins:\n  - id: f\n    name: hosttest-flaky\n    config:\n      max: -1\n      failx: true\n")
	want := []string{
		`composition.yml:6: entry "f": config key failx: unknown key; did you mean fail? (known keys: fail, max)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check (-want +got):\n%s", diff)
	}
	if got := hosttest.Check(t, echo); got != nil {
		t.Errorf("Check of a valid composition = %q", got)
	}
	hosttest.CheckKey(t, "hosttest-flaky", "max", "fail: false\nmax: -1 #<\n")
}
