package mcpclient

import (
	"strings"
	"testing"
)

// A password net/url cannot parse (a bad escape, #, space, ^) or a URL
// with no host (a socket DSN) still marks the value as a secret.
func TestScrubDropsUnparseableURLPasswords(t *testing.T) {
	for _, kv := range []string{
		"DB1=postgres://u:p%zz@db/app", "DB2=postgres://u:pa#ss@db/app", "DB3=mysql://u:p w@db/app",
		"DB4=postgres://u:p^w@db/app", "DB5=postgres://u:pw@/app?host=/run/pg", "DB6=amqp://u:p/w@mq/",
	} {
		if got := childEnv([]string{kv}, nil, InheritScrub); len(got) != 0 {
			t.Errorf("scrub passed %q", got)
		}
	}
	keep := []string{"ODD=https://ex ample.com/a", "PKG=https://registry.example.com/@scope/pkg"}
	if got := childEnv(keep, nil, InheritScrub); len(got) != len(keep) {
		t.Errorf("scrub kept %q of %q", got, keep)
	}
}

// A password holding a /, # or ? ends the authority early on the text, and
// net/url refuses the URL: the error that quotes it must hide it all the
// same.
func TestRedactUnparseableURLPassword(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p/ss@host/x":      "https://u:***@host/x",
		"https://u:pa#ss@host/x?k=v": "https://u:***@host/x?k=***",
		"https://u:p?s@host/x":       "https://u:***@host/x",
		// It parses: the @ is in the path, and the URL goes out as it is.
		"https://host/k@v/x": "https://host/k@v/x",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
	cfg := Defaults()
	cfg.Transport, cfg.ServerName, cfg.URL = TransportStreamableHTTP, "w", "https://u:p/ss@host/x"
	if err := cfg.Validate(); err == nil || strings.Contains(err.Error(), "p/ss") {
		t.Errorf("validate error shows the URL's password: %v", err)
	}
}
