package clock_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
)

// TestClockZoneIsChecked: a zone the entry names that does not exist is a
// config error at the key's line, before anything starts.
func TestClockZoneIsChecked(t *testing.T) {
	c, err := host.ParseComposition("composition.yml", []byte("plugins:\n  - id: clock\n    name: example-clock\n    config:\n      zone: Mars/Base\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `composition.yml:5: entry "clock": config key zone: unknown time zone Mars/Base; use an IANA name such as Asia/Tokyo`
	if err := host.Check(c); err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %s", err, want)
	}
}

// TestClockWithoutCommands: the command is optional; without the commands
// service the tool still works.
func TestClockWithoutCommands(t *testing.T) {
	h := hosttest.Start(t, "plugins:\n  - {id: commands, name: commands, disabled: true}\n  - {id: clock, name: example-clock}\n")
	if st := host.Find(h.Status(), "clock"); st.State != host.StateActive {
		t.Fatalf("clock: %+v", st)
	}
	if res := h.Call("clock_now", ""); res.Err != nil {
		t.Errorf("clock_now = %+v", res)
	}
}

// TestDocShowsThePlugin: docs/writing-plugins.md shows these files as they
// are, so the page cannot drift from code that builds and passes its
// tests, and they stay as short as the page says.
func TestDocShowsThePlugin(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "writing-plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	for file, most := range map[string]int{"clock.go": 50, "zones.go": 40, "clock_test.go": 40} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, append(append([]byte("```go\n"), src...), "```\n"...)) {
			t.Errorf("docs/writing-plugins.md does not show docs/clock/%s verbatim; paste it in again", file)
		}
		if n := bytes.Count(src, []byte("\n")); n > most {
			t.Errorf("%s has %d lines; the docs promise at most %d", file, n, most)
		}
	}
}
