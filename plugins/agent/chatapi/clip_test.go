package chatapi

import "testing"

// clip cuts on one line and never inside a character.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"two\n lines", 20, "two lines"},
		{"ééé", 3, "é…"}, // byte 3 is inside the second é
		{"a😀b", 2, "a…"},
	} {
		if got := Clip(tc.in, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
