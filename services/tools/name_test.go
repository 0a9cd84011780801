package tools_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

var nameRE = regexp.MustCompile(tools.NamePattern)

func TestNameContract(t *testing.T) {
	tests := []struct {
		name  string
		valid bool
		want  string // part of the error message
	}{
		{"a", true, ""},
		{"_", true, ""},
		{"-", true, ""},
		{"0", true, ""},
		{"mcp__github__create_issue", true, ""},
		{"Az09_-", true, ""},
		{strings.Repeat("x", 64), true, ""},
		{strings.Repeat("x", 65), false, "65 bytes, more than 64"},
		{strings.Repeat("x", 1000), false, "more than 64"},
		{"", false, "empty"},
		{"a b", false, "character ' ' at byte 1"},
		{"a.b", false, "character '.' at byte 1"},
		{"é", false, "character 'é' at byte 0"},
		{"tool名", false, "character '名' at byte 4"},
		{"Ａ", false, "character 'Ａ'"}, // full-width A
		{"a\xffb", false, "byte 0xff at byte 1"},
		{"a\x00", false, `character '\x00' at byte 1`},
		{"a\n", false, `character '\n' at byte 1`},
		// 64 bytes but fewer characters: the limit is on bytes, and a
		// non-ASCII byte is refused anyway.
		{strings.Repeat("é", 32), false, "character 'é' at byte 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tools.ValidName(tt.name); got != tt.valid {
				t.Errorf("ValidName(%q) = %v, want %v", tt.name, got, tt.valid)
			}
			if got := nameRE.MatchString(tt.name); got != tt.valid {
				t.Fatalf("test table disagrees with NamePattern for %q", tt.name)
			}
			err := tools.CheckName(tt.name)
			if tt.valid {
				if err != nil {
					t.Fatalf("CheckName(%q) = %v, want nil", tt.name, err)
				}
				return
			}
			if !errors.Is(err, tools.ErrInvalidName) {
				t.Fatalf("CheckName(%q) = %v, want ErrInvalidName", tt.name, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckName(%q) = %q, want it to contain %q", tt.name, err, tt.want)
			}
			_, rerr := tools.New(nil).Register(testScope(t), noop(tt.name))
			if !errors.Is(rerr, tools.ErrInvalidName) {
				t.Errorf("Register(%q) = %v, want ErrInvalidName", tt.name, rerr)
			}
		})
	}
}

// TestNameEveryForbiddenASCII checks every ASCII character outside the
// contract, alone, at the start, in the middle and at the end of a name.
func TestNameEveryForbiddenASCII(t *testing.T) {
	allowed := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
	for c := 0; c < 128; c++ {
		ch := string(rune(c))
		if strings.Contains(allowed, ch) {
			if !tools.ValidName(ch) {
				t.Errorf("ValidName(%q) = false, want true", ch)
			}
			continue
		}
		for _, name := range []string{ch, ch + "ab", "a" + ch + "b", "ab" + ch, strings.Repeat("a", 63) + ch} {
			if tools.ValidName(name) {
				t.Errorf("ValidName(%q) = true, want false", name)
			}
			if err := tools.CheckName(name); !errors.Is(err, tools.ErrInvalidName) {
				t.Errorf("CheckName(%q) = %v, want ErrInvalidName", name, err)
			}
		}
	}
}

func FuzzValidName(f *testing.F) {
	for _, s := range []string{"", "a", "mcp__x__y", strings.Repeat("a", 64), strings.Repeat("a", 65), "a.b", "é", "\xff", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		valid := tools.ValidName(s)
		if want := nameRE.MatchString(s); valid != want {
			t.Fatalf("ValidName(%q) = %v, regexp says %v", s, valid, want)
		}
		err := tools.CheckName(s)
		if (err == nil) != valid {
			t.Fatalf("CheckName(%q) = %v, but ValidName = %v", s, err, valid)
		}
		if err != nil && !errors.Is(err, tools.ErrInvalidName) {
			t.Fatalf("CheckName(%q) = %v, not ErrInvalidName", s, err)
		}
		if valid && (len(s) < 1 || len(s) > tools.MaxNameLen) {
			t.Fatalf("valid name %q has length %d", s, len(s))
		}
	})
}
