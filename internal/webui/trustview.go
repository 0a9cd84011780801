package webui

import "strings"

// changePart is one part of a held tool's change, its stored and offered
// values side by side. The lines are the review's (pins' describeChange):
// strings quoted so that invisible characters show as escapes, and text
// hidden from a reader flagged.
type changePart struct {
	Field   string
	Stored  []string
	Offered []string
	Flag    string // a warning the policy raised of this tool (hidden text)
	Note    string // a line that is neither (a heading, a remark)
}

// sideBySide splits a one-tool review's text into its parts. What it does
// not recognise is kept as a note, so nothing the review says is lost.
func sideBySide(text string) []changePart {
	var parts []changePart
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	cur := func() *changePart {
		if len(parts) == 0 {
			parts = append(parts, changePart{})
		}
		return &parts[len(parts)-1]
	}
	for i, l := range lines {
		switch {
		case i == 0 && strings.HasPrefix(l, "server "), strings.TrimSpace(l) == "",
			strings.HasPrefix(l, "approve exactly this with: "), strings.HasPrefix(l, "  digest: "):
			// The counts, the command line and the digest: the page shows
			// them itself.
		case strings.HasPrefix(l, "    - "):
			cur().Stored = append(cur().Stored, l[6:])
		case strings.HasPrefix(l, "    + "):
			cur().Offered = append(cur().Offered, l[6:])
		case strings.HasPrefix(l, "  ! "):
			parts = append(parts, changePart{Flag: l[4:]})
		case strings.HasPrefix(l, "  ") && strings.HasSuffix(l, ":") && !strings.Contains(l[2:len(l)-1], " "):
			parts = append(parts, changePart{Field: l[2 : len(l)-1]})
		case strings.HasPrefix(l, "  ") && strings.Contains(l, ": "):
			k, v, _ := strings.Cut(l[2:], ": ")
			p := changePart{Field: k}
			switch {
			case strings.HasPrefix(v, "added "):
				p.Offered = []string{strings.TrimPrefix(v, "added ")}
			case strings.HasPrefix(v, "removed (was ") && strings.HasSuffix(v, ")"):
				p.Stored = []string{v[len("removed (was ") : len(v)-1]}
			case strings.Contains(v, " → "):
				was, now, _ := strings.Cut(v, " → ")
				p.Stored, p.Offered = []string{was}, []string{now}
			default:
				p.Note = l
				p.Field = ""
			}
			parts = append(parts, p)
		default:
			parts = append(parts, changePart{Note: strings.TrimSpace(l)})
		}
	}
	return parts
}
