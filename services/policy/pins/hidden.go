package pins

import (
	"fmt"
	"strings"
)

// HiddenText describes what s holds that a person does not see but a
// model reads: zero-width characters, bidi controls, Unicode tag
// characters (which spell ASCII invisibly) and variation selectors (which
// can carry bytes). It returns "" when s has none, else a note such as
// `3 invisible characters (U+200B ×2, U+202E); tag characters spell "run
// rm"`. A tool description that carries them is how a server hides
// instructions from the person who reviews it.
func HiddenText(s string) string {
	var (
		count  int
		order  []rune
		counts = map[rune]int{}
		tags   strings.Builder
	)
	for _, r := range s {
		if !invisible(r) {
			continue
		}
		count++
		if counts[r] == 0 {
			order = append(order, r)
		}
		counts[r]++
		if r >= 0xE0020 && r <= 0xE007E {
			tags.WriteRune(r - 0xE0000)
		}
	}
	if count == 0 {
		return ""
	}
	const shown = 8
	var parts []string
	for i, r := range order {
		if i == shown {
			parts = append(parts, "…")
			break
		}
		p := fmt.Sprintf("U+%04X", r)
		if counts[r] > 1 {
			p += fmt.Sprintf(" ×%d", counts[r])
		}
		parts = append(parts, p)
	}
	note := fmt.Sprintf("%d invisible character(s) (%s)", count, strings.Join(parts, ", "))
	if tags.Len() > 0 {
		note += fmt.Sprintf("; tag characters spell %q", cutRunes(tags.String(), 120))
	}
	return note
}

// invisible reports whether r is shown as nothing, or moves text around,
// while a model reads it.
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x180E:
		return true
	case r >= 0x200B && r <= 0x200F: // zero-width space, joiners, LRM, RLM
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F: // bidi embeddings and overrides; word joiner, isolates, invisible operators
		return true
	case r == 0x3164, r == 0xFEFF, r == 0xFFA0:
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	}
	return false
}

// cutRunes cuts s to max characters, the last one an ellipsis.
func cutRunes(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-1]) + "…"
}
