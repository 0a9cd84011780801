package clock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/host"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"

	_ "github.com/dsh-host/dsh-host/docs/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run applies composition on a new host whose settings.yaml holds
// settings, and returns the host, shut down when the test ends.
func run(t *testing.T, settings, composition string) *host.Host {
	t.Helper()
	home := t.TempDir()
	t.Setenv("DSH_HOME", home)
	if err := os.WriteFile(filepath.Join(home, "settings.yaml"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		if err := h.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c, err := host.ParseComposition("composition.yml", []byte(composition), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestClock runs the plugin of the docs as a user would: its tool reads
// the layout from the settings section, its command answers the same, and
// a second instance names both after its id.
func TestClock(t *testing.T) {
	h := run(t, "clock:\n  layout: MST\n", "plugins:\n  - {id: clock, name: clock}\n  - {id: clock2, name: clock}\n")
	for _, id := range []string{"clock", "clock2"} {
		if st := host.Find(h.Status(), id); st.State != host.StateActive {
			t.Fatalf("%s: %+v", id, st)
		}
	}
	reg, _ := host.Lookup(h, tools.Key)
	for args, want := range map[string]string{`{"zone":"UTC"}`: "UTC", `{}`: "UTC"} {
		res := reg.Execute(context.Background(), tools.Caller{Kind: "test"}, "clock2_now", json.RawMessage(args))
		if res.Err != nil || len(res.Content) != 1 || res.Content[0].Text != want {
			t.Errorf("clock2_now %s = %+v, want %q", args, res, want)
		}
	}
	res := reg.Execute(context.Background(), tools.Caller{Kind: "test"}, "clock_now", json.RawMessage(`{"zone":"Nowhere/Town"}`))
	if res.Err == nil || !strings.Contains(res.Err.Error(), "Nowhere/Town") {
		t.Errorf("an unknown zone = %+v, want an error naming it", res)
	}
	def, _ := reg.Get("clock_now")
	if !bytes.Contains(def.InputSchema, []byte(`"zone":{"type":"string","description":"an IANA time zone; UTC when empty"}`)) {
		t.Errorf("input schema = %s", def.InputSchema)
	}

	cmds, _ := host.Lookup(h, commands.Key)
	if got := cmds.Run(context.Background(), tools.Caller{Kind: "test"}, "/clock UTC"); got != (commands.Reply{Text: "UTC"}) {
		t.Errorf("/clock UTC = %+v", got)
	}
}

// TestClockWithoutCommands: the command is optional; without the commands
// service the tool still works.
func TestClockWithoutCommands(t *testing.T) {
	h := run(t, "", "plugins:\n  - {id: commands, name: commands, disabled: true}\n  - {id: clock, name: clock}\n")
	if st := host.Find(h.Status(), "clock"); st.State != host.StateActive {
		t.Fatalf("clock: %+v", st)
	}
	reg, _ := host.Lookup(h, tools.Key)
	if res := reg.Execute(context.Background(), tools.Caller{Kind: "test"}, "clock_now", nil); res.Err != nil {
		t.Errorf("clock_now = %+v", res)
	}
}

// TestDocShowsThePlugin: docs/writing-plugins.md shows this file as it is,
// so the page cannot drift from code that builds and passes its tests.
func TestDocShowsThePlugin(t *testing.T) {
	src, err := os.ReadFile("clock.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "writing-plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, append(append([]byte("```go\n"), src...), "```\n"...)) {
		t.Error("docs/writing-plugins.md does not show docs/clock/clock.go verbatim; paste it in again")
	}
	if n := bytes.Count(src, []byte("\n")); n > 40 {
		t.Errorf("the plugin of the docs has %d lines; the docs promise at most 40", n)
	}
}
