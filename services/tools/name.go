package tools

import (
	"errors"
	"fmt"
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
