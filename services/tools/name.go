package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// NamePattern is the model function-name contract every registered tool name
// obeys (OpenAI-compatible APIs, DeepSeek's among them, reject anything else).
const NamePattern = `^[A-Za-z0-9_-]{1,64}$`

// MaxNameLen is the longest tool name NamePattern admits.
const MaxNameLen = 64

// ErrInvalidName marks a tool name outside NamePattern.
var ErrInvalidName = errors.New("invalid tool name")

// ValidName reports whether name matches NamePattern.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

// CheckName returns nil when name matches NamePattern, and otherwise an error
// (errors.Is ErrInvalidName) that says what is wrong with it and where.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty; use 1 to %d characters from A-Z a-z 0-9 _ -", ErrInvalidName, MaxNameLen)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w %q: %d bytes, more than %d; shorten it", ErrInvalidName, name, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if nameByte(name[i]) {
			continue
		}
		r, _ := utf8.DecodeRuneInString(name[i:])
		what := fmt.Sprintf("character %q", r)
		if r == utf8.RuneError {
			what = fmt.Sprintf("byte 0x%02x", name[i])
		}
		return fmt.Errorf("%w %q: %s at byte %d is not allowed; use only A-Z a-z 0-9 _ -", ErrInvalidName, name, what, i)
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// FitName returns name made a valid function name of at most limit
// characters (limit between 14 and MaxNameLen): name itself when it already
// is one; otherwise name with every character outside [A-Za-z0-9_-]
// replaced by "_", cut to limit-13 characters, followed by "_" and the
// first 12 hex digits of sha256(identity). identity is what the name
// stands for (for an MCP tool, serverName + "\x00" + rawName), so that
// names that replacement or cutting would make equal stay apart, and a
// name is the same wherever and whenever it is fitted. Characters are
// counted as UTF-16 code units, so a character outside the Basic
// Multilingual Plane becomes "__".
//
// With limit MaxNameLen and name "mcp__<serverName>__<rawName>" it is the
// public name mcp-client registers; a gateway fits the same names to a
// smaller limit for clients that prefix them.
func FitName(name string, limit int, identity string) string {
	fitted, changed := sanitizeName(name)
	if !changed && fitted != "" && len(fitted) <= limit {
		return fitted
	}
	return withHash(fitted, limit, identity)
}

// sanitizeName replaces every character of name outside [A-Za-z0-9_-] by
// "_" (two for one outside the Basic Multilingual Plane: UTF-16 code units),
// and says whether it replaced any.
func sanitizeName(name string) (string, bool) {
	var b strings.Builder
	b.Grow(len(name))
	changed := false
	for _, r := range name {
		switch {
		case r < utf8.RuneSelf && nameByte(byte(r)):
			b.WriteRune(r)
		case r > 0xFFFF:
			// Two UTF-16 code units, each replaced.
			b.WriteString("__")
			changed = true
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	return b.String(), changed
}

// withHash cuts the valid name to limit-13 characters and appends "_" and
// the first 12 hex digits of sha256(identity).
func withHash(name string, limit int, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	if keep := limit - 13; len(name) > keep {
		name = name[:keep]
	}
	return name + "_" + hex.EncodeToString(sum[:])[:12]
}
