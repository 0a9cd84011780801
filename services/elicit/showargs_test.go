package elicit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShowArgs: one line, long strings cut inside the JSON, the whole cut
// to max characters, never inside a character; what is not JSON is shown
// cut as it is.
func TestShowArgs(t *testing.T) {
	long := strings.Repeat("é", 100)
	for _, c := range []struct {
		args string
		max  int
		want string
	}{
		{`{"a": 1,  "b": "x"}`, 200, `{"a":1,"b":"x"}`},
		{`{"p":"` + long + `"}`, 200, `{"p":"` + strings.Repeat("é", 59) + `…"}`},
		{`{"a":"` + long + `","b":"` + long + `"}`, 40, `{"a":"` + strings.Repeat("é", 33) + `…`},
		{`{"cmd":"rm -rf /\n\u001b[2J"}`, 200, `{"cmd":"rm -rf /\n\u001b[2J"}`},
		{`not json ` + long, 20, `not json ` + strings.Repeat("é", 10) + `…`},
	} {
		got := ShowArgs([]byte(c.args), c.max)
		if got != c.want {
			t.Errorf("ShowArgs(%.40s…, %d) = %q, want %q", c.args, c.max, got, c.want)
		}
		if !utf8.ValidString(got) || strings.Contains(got, "\n") || utf8.RuneCountInString(got) > c.max {
			t.Errorf("ShowArgs(%.40s…, %d) = %q: not one valid line within max", c.args, c.max, got)
		}
	}
}
