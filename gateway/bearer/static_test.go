package bearer

import (
	"strings"
	"testing"
)

// TestCheckStatic: beyond loopback (or where the address does not parse,
// failing closed) a static token needs MinStaticLen bytes; on loopback
// any token is taken. The error never shows the token.
func TestCheckStatic(t *testing.T) {
	short, long := strings.Repeat("q", MinStaticLen-1), strings.Repeat("q", MinStaticLen)
	for _, tt := range []struct {
		addr, token string
		ok          bool
	}{
		{"0.0.0.0:9464", short, false},
		{":8931", short, false},
		{"[::]:8931", short, false},
		{"192.168.1.2:8931", short, false},
		{"no port", long[1:], false},
		{"0.0.0.0:9464", long, true},
		{"no port", long, true},
		{"127.0.0.1:0", "x", true},
		{"[::1]:0", "x", true},
		{"localhost:9464", "x", true},
	} {
		err := CheckStatic(tt.token, tt.addr)
		if (err == nil) != tt.ok {
			t.Errorf("CheckStatic(%d bytes, %q) = %v; want ok %v", len(tt.token), tt.addr, err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), tt.token) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
}

// TestHasStatic: only "Bearer TOKEN" (any case of the scheme) with the
// token itself is taken.
func TestHasStatic(t *testing.T) {
	const token = "0123456789abcdef"
	for header, want := range map[string]bool{
		"Bearer " + token:         true,
		"bearer " + token:         true,
		"Bearer  " + token + " ":  true,
		"":                        false,
		"Bearer":                  false,
		"Bearer ":                 false,
		token:                     false,
		"Basic " + token:          false,
		"Bearer " + token[1:]:     false,
		"Bearer " + token + "x":   false,
		"Bearer " + token + token: false,
	} {
		if got := HasStatic(header, []byte(token)); got != want {
			t.Errorf("HasStatic(%q) = %v, want %v", header, got, want)
		}
	}
}
