package chatapi

import (
	"net/url"
	"strings"
)

// Host is base's host as DNS compares it: lower case, without the
// trailing dot of a fully qualified name, so that
// https://GenerativeLanguage.googleapis.com. is recognised as Google's
// API. "" when base does not parse.
func Host(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}
