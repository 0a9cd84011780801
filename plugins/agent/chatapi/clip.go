package chatapi

import (
	"strings"
	"unicode/utf8"
)

// Clip returns s on one line, cut to n bytes with "…" and never inside a
// character: how a status line shows a model's, a server's or the
// network's text.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
