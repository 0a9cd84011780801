package remote

import "testing"

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:pw@host/mcp?token=x":           "https://u:***@host/mcp?token=***",
		"https://host/mcp":                        "https://host/mcp",
		"http://127.0.0.1:3000/mcp":               "http://127.0.0.1:3000/mcp",
		"https://ghp_abc@github.example.com/x":    "https://***@github.example.com/x",
		"https://host/p?a=1&b=&flag#frag":         "https://host/p?a=***&b=***&***#frag",
		"https://u:p@ss@host:8443/?k=v":           "https://u:***@host:8443/?k=***",
		"https://host?sig=abc":                    "https://host?sig=***",
		"postgres://u:pw@db:5432/app?sslmode=off": "postgres://u:***@db:5432/app?sslmode=***",
		"not a url": "not a url",
		"http://u:pw@[::1:bad/mcp?token=unparsable": "http://u:***@[::1:bad/mcp?token=***",
		// A password holding a /, # or ? ends the authority early on the
		// text, and net/url refuses the URL: it is hidden all the same.
		"https://u:p/ss@host/x":      "https://u:***@host/x",
		"https://u:pa#ss@host/x?k=v": "https://u:***@host/x?k=***",
		"https://u:p?s@host/x":       "https://u:***@host/x",
		// It parses: the @ is in the path, and the URL goes out as it is.
		"https://host/k@v/x": "https://host/k@v/x",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
