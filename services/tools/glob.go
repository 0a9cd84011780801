package tools

import "strings"

// Match reports whether name matches pattern, where `*` matches any run of
// characters (including none) and every other character matches itself. The
// match is anchored at both ends: "mcp__*" matches "mcp__github__x" but not
// "x_mcp__y". It allocates nothing.
func Match(pattern, name string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == name
	}
	if !strings.HasPrefix(name, pattern[:star]) {
		return false
	}
	name = name[star:]
	pattern = pattern[star+1:]
	for {
		star = strings.IndexByte(pattern, '*')
		if star < 0 {
			// The tail must end the name without overlapping what the
			// middle parts consumed.
			return strings.HasSuffix(name, pattern)
		}
		// Leftmost placement of each middle part leaves the most room for
		// the rest, so it finds a match whenever one exists.
		if mid := pattern[:star]; mid != "" {
			i := strings.Index(name, mid)
			if i < 0 {
				return false
			}
			name = name[i+len(mid):]
		}
		pattern = pattern[star+1:]
	}
}

// Allows reports whether m lets a caller see and call the tool name. A nil
// mask allows everything.
func (m *Mask) Allows(name string) bool {
	for ; m != nil; m = m.Within {
		if len(m.Allow) > 0 && !matchAny(m.Allow, name) || matchAny(m.Deny, name) {
			return false
		}
	}
	return true
}

// Restrict returns c limited further by m: it sees a tool only when both
// its current mask and m allow it. A restriction can only narrow what a
// caller sees, never widen it.
func (c Caller) Restrict(m Mask) Caller {
	m.Within = c.Mask
	c.Mask = &m
	return c
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if Match(p, name) {
			return true
		}
	}
	return false
}
