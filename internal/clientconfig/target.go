package clientconfig

import (
	"fmt"
	"net/url"
)

// checkGateway refuses a gateway target a client could not use: a URL
// that is not an absolute http(s) one with a host (127.0.0.1:8931/mcp
// without its scheme), or carries credentials (they would sit in the
// client's file in clear); a token variable that is not a variable's
// name, which each client would read its own way, or not at all.
func (t Target) checkGateway() error {
	u, err := url.Parse(t.URL)
	switch {
	case err != nil:
		return fmt.Errorf("--http %q is not a URL: %w", t.URL, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return fmt.Errorf("--http %q: want the gateway's http(s) URL, such as http://127.0.0.1:8931/mcp", t.URL)
	case u.User != nil:
		return fmt.Errorf("--http %q: credentials do not go in the URL; name the token's variable with --token-env", u.Redacted())
	}
	if t.TokenEnv != "" && !envName(t.TokenEnv) {
		return fmt.Errorf("--token-env %q: want a variable's name (letters, digits and _, not first a digit)", t.TokenEnv)
	}
	return nil
}

func envName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}
