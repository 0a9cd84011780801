package remote

import (
	"net/url"
	"strings"
)

// Redact hides the secrets a URL may carry: the password of its
// userinfo (u:***@; the whole userinfo when it has no password, since a
// lone user is often a token, as in https://TOKEN@host), and every query
// value (?token=***). It works on the text, so that a URL that does not
// parse is redacted too.
func Redact(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	if _, err := url.Parse(s); err != nil {
		// A password holding / ? or # ends the authority early on the
		// text (and is why net/url refuses it): hide all up to the last
		// @. Only an unparsable URL, which is never sent, gets this.
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if user, _, ok := strings.Cut(rest[:at], ":"); ok && !strings.ContainsAny(user, "/?#") {
				rest = user + ":***" + rest[at:]
			} else {
				rest = "***" + rest[at:]
			}
		}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(authority[:at], ":")
		if hasPassword {
			authority = user + ":***" + authority[at:]
		} else {
			authority = "***" + authority[at:]
		}
	}
	fragment := ""
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail, fragment = tail[:i], tail[i:]
	}
	if path, query, ok := strings.Cut(tail, "?"); ok && query != "" {
		params := strings.Split(query, "&")
		for i, p := range params {
			if k, _, ok := strings.Cut(p, "="); ok {
				params[i] = k + "=***"
			} else if p != "" {
				params[i] = "***"
			}
		}
		tail = path + "?" + strings.Join(params, "&")
	}
	return scheme + "://" + authority + tail + fragment
}
