package main

import (
	"strings"
	"testing"
)

// TestFlagHelpValueNames scans every subcommand's help: a flag's line
// shows a value name (the backquoted word of its usage, which Go's flag
// help reads as one) only when the flag takes a value, and that name is
// one word. A bool flag whose usage quotes a command in backquotes would
// read as taking it as its value (-no-attach dsh-host run).
func TestFlagHelpValueNames(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	for _, c := range subcommands() {
		code, help, stderr := runIn(t, "", c.name, "-h")
		if code != exitOK {
			t.Fatalf("%s -h: exit %d\n%s", c.name, code, stderr)
		}
		_, list, ok := strings.Cut(help, "\nFlags:\n")
		if !ok {
			continue // no flags
		}
		n := 0
		for line := range strings.Lines(list) {
			rest, ok := strings.CutPrefix(line, "  -")
			if !ok {
				continue
			}
			n++
			rest, _, _ = strings.Cut(strings.TrimRight(rest, "\n"), "\t")
			name, value, _ := strings.Cut(rest, " ")
			if strings.Contains(value, " ") {
				t.Errorf("%s -%s: the help shows the value name %q, not one word: %s", c.name, name, value, strings.TrimSpace(line))
			}
			// A flag that takes a value takes "-h" as it; a bool flag
			// leaves it to ask for the help. The unknown flag after it
			// keeps the command from running either way.
			probe, _, _ := runIn(t, "", c.name, "-"+name, "-h", "-no-such-flag-for-the-probe")
			takesValue := probe != exitOK
			if takesValue != (value != "") {
				t.Errorf("%s -%s: takes a value: %v, but its help line reads %q", c.name, name, takesValue, strings.TrimSpace(line))
			}
		}
		if n == 0 {
			t.Errorf("%s: found no flag lines in its help:\n%s", c.name, help)
		}
	}
}
