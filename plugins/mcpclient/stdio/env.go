package stdio

import (
	"net/url"
	"runtime"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/dsh-host/dsh-host/internal/childenv"
)

// Values of the inheritEnv key: what a stdio child inherits of the host's
// environment (an entry's own env is passed in every mode).
const (
	// InheritScrub passes the host's environment minus what looks like a
	// secret (scrubbed).
	InheritScrub = "scrub"
	// InheritMinimal passes only what a program needs to run
	// (childenv.Minimal).
	InheritMinimal = "minimal"
	// InheritAll passes the host's whole environment.
	InheritAll = "all"
)

// secretWords are the name fragments that mark a variable as a secret, in
// upper case, matched anywhere in the upper-cased name. WEBHOOK is there
// because a webhook URL is itself the credential (anyone holding it may
// post). AUTH is matched apart (secretName) so that GIT_AUTHOR_NAME passes.
var secretWords = []string{"KEY", "PASS", "SECRET", "TOKEN", "CREDENTIAL", "CREDS", "COOKIE", "SESSION", "PRIVATE", "WEBHOOK", "JWT", "BEARER"}

// secretWord reports whether w, one word of an upper-cased name, marks a
// secret on its own: PAT with an optional number (GH_PAT2, not PATH),
// PWD (MYSQL_PWD; the variable PWD itself is kept by secretName), DSN
// (SENTRY_DSN), SK (STRIPE_SK, not DESK), or AUTH within a word other
// than AUTHOR.
func secretWord(w string) bool {
	switch w {
	case "PWD", "DSN", "SK":
		return true
	case "AUTHOR", "AUTHORS":
		return false
	}
	if num, ok := strings.CutPrefix(w, "PAT"); ok && strings.Trim(num, "0123456789") == "" {
		return true
	}
	return strings.Contains(w, "AUTH")
}

// secretName reports whether an ambient variable's name marks it as a
// secret: it contains one of secretWords, has a word secretWord marks,
// or starts with DSH_ (the host's own settings). PWD and OLDPWD, the
// shell's directories, are not secrets.
func secretName(name string) bool {
	upper := strings.ToUpper(name)
	if strings.HasPrefix(upper, "DSH_") {
		return true
	}
	if upper == "PWD" || upper == "OLDPWD" {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	words := strings.FieldsFunc(upper, func(r rune) bool { return (r < 'A' || r > 'Z') && (r < '0' || r > '9') })
	return slices.ContainsFunc(words, secretWord)
}

// secretValue reports whether a value is a URL that carries a credential:
// any userinfo (postgres://u:pw@host/db, or a key alone as in a Sentry
// DSN, https://key@host/1), or a query parameter whose name marks a
// secret (https://host/?api_key=...).
func secretValue(value string) bool {
	value = strings.TrimSpace(value)
	// A JDBC URL wraps a URL: jdbc:mysql://u:pw@db/app.
	if len(value) > 5 && strings.EqualFold(value[:5], "jdbc:") {
		value = value[5:]
	}
	_, rest, ok := strings.Cut(value, "://")
	if !ok {
		return false
	}
	u, err := url.Parse(value)
	if err != nil {
		// Generated passwords often hold what net/url refuses (%, #, /,
		// ^, a space): judge such a URL by its text, user:...@ before
		// the first @. Dropping a URL that is merely malformed costs
		// little.
		at := strings.IndexByte(rest, '@')
		return at >= 0 && (strings.Contains(rest[:at], ":") || !strings.Contains(rest[:at], "/"))
	}
	// Before any check of the host: a socket DSN
	// (postgres://u:pw@/db?host=/run/pg) has none. A user name alone is
	// often the key itself.
	if u.User != nil {
		return true
	}
	if u.Host == "" {
		return false
	}
	for k := range u.Query() {
		if secretName(k) {
			return true
		}
	}
	return false
}

// secretKeyEnd says whether a connection string's key (lower case,
// without separators) ends in a word whose value is a credential: Password and Pwd of
// ADO.NET and ODBC, libpq's password, Azure's AccountKey, SharedAccessKey
// and SharedAccessSignature, a JVM's -D...Password. Words such as AUTH
// that secretName matches in a variable's name are left out here: values
// of ordinary variables hold them as keys (MAKEFLAGS'
// --jobserver-auth=...).
func secretKeyEnd(norm string) bool {
	for _, k := range [...]string{"password", "passwd", "pwd", "secret", "accountkey", "sharedaccesskey", "sharedaccesssignature",
		"apikey", "accesskey", "secretkey", "privatekey", "token"} {
		if strings.HasSuffix(norm, k) {
			return true
		}
	}
	return false
}

// secretPair reports whether a value holds key=value pairs, one of which
// is a credential: a connection string (Server=db;User Id=u;Password=pw;,
// host=db user=u password=pw, a JDBC URL's ;password=pw or
// ?password=pw). A pair with an empty value carries nothing.
func secretPair(value string) bool {
	if !strings.Contains(value, "=") {
		return false
	}
	for _, seg := range strings.FieldsFunc(value, func(r rune) bool { return r == ';' || r == '&' || r == '?' || unicode.IsSpace(r) }) {
		key, v, ok := strings.Cut(seg, "=")
		if !ok || strings.Trim(v, `"'`) == "" {
			continue
		}
		key = strings.TrimLeft(key, "-")
		if key == "" || !unicode.IsLetter(rune(key[0])) {
			continue
		}
		norm := strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			case r == '_' || r == '-' || r == '.' || r == ' ':
				return -1
			}
			return '!' // not a key: a path, an expression
		}, key)
		if strings.Contains(norm, "!") {
			continue
		}
		if norm == "pass" || secretKeyEnd(norm) {
			return true
		}
	}
	return false
}

// LooksSecret reports whether a variable (or a header) called name with
// value is a secret, by the rule that keeps such variables of the host's
// environment from a stdio server under inheritEnv: scrub.
func LooksSecret(name, value string) bool {
	return secretName(name) || secretValue(value) || secretPair(value)
}

// Env returns the environment of a stdio server: what mode keeps of
// ambient, then extra on top, so explicit entries always win. The result
// is sorted for reproducibility.
func Env(ambient []string, extra map[string]string, mode string) []string {
	fold := runtime.GOOS == "windows"
	env := make(map[string]string, len(ambient)+len(extra))
	for _, kv := range ambient {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		switch mode {
		case InheritAll:
		case InheritMinimal:
			if !childenv.Minimal(name, fold) {
				continue
			}
		default:
			if LooksSecret(name, value) {
				continue
			}
		}
		env[name] = value
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
