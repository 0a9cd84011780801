package mcpservers

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/stdio"
)

// Secret is an inline value that MoveSecrets kept out of an entry, which
// now refers to it as ${Var}.
type Secret struct {
	Var, Value string
	// Server and Key say where it was: the serverName, and "env NAME" or
	// "header NAME".
	Server, Key string
}

// MoveSecrets replaces each inline secret of the servers' env and headers
// with a ${VAR} reference, notes it on its server, and returns what to
// export. A value is a secret by the rule that keeps a variable of the
// host's environment from a stdio server (inheritEnv: scrub): its name
// (env variable or header) holds KEY, TOKEN, SECRET, PASS, AUTH... or it
// is a URL carrying a credential. A value that already refers to a
// variable (${...}) is left alone. An env value becomes ${ITS_NAME} unless
// another server's value took that name, then ${SERVER_ITS_NAME}; a header
// becomes ${SERVER_HEADER}, and an Authorization "Bearer x" keeps its
// scheme: "Bearer ${SERVER_TOKEN}". In the server's url, a password
// becomes ${SERVER_URL_PASSWORD}, a user part alone ${SERVER_URL_USER},
// and a query parameter named like a secret ${SERVER_PARAM}.
func MoveSecrets(servers []Imported) []Secret {
	var out []Secret
	values := map[string]string{} // variable name -> value
	claim := func(preferred, fallback, value string) string {
		for _, n := range []string{preferred, fallback} {
			if n == "" {
				continue
			}
			if v, used := values[n]; !used || v == value {
				values[n] = value
				return n
			}
		}
		for i := 2; ; i++ {
			n := fmt.Sprintf("%s_%d", fallback, i)
			if v, used := values[n]; !used || v == value {
				values[n] = value
				return n
			}
		}
	}
	for i := range servers {
		imp := &servers[i]
		cfg := &imp.Config
		prefix := varName(cfg.ServerName)
		for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
			v := cfg.Env[k]
			if v == "" || strings.Contains(v, "${") || !stdio.LooksSecret(k, v) {
				continue
			}
			preferred := ""
			if validVar.MatchString(k) {
				preferred = k
			}
			name := claim(preferred, prefix+"_"+varName(k), v)
			cfg.Env[k] = "${" + name + "}"
			imp.note("env %s: its value is not written here; export %s", k, name)
			out = append(out, Secret{Var: name, Value: v, Server: cfg.ServerName, Key: "env " + k})
		}
		for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
			v := cfg.Headers[k]
			if v == "" || strings.Contains(v, "${") || !stdio.LooksSecret(k, v) {
				continue
			}
			scheme, cred := "", v
			if s, c, ok := strings.Cut(v, " "); ok && authScheme.MatchString(s) && strings.EqualFold(k, "Authorization") {
				scheme, cred = s+" ", strings.TrimSpace(c)
			}
			fallback := prefix + "_" + varName(k)
			switch {
			case scheme != "":
				fallback = prefix + "_TOKEN"
			case strings.HasPrefix(varName(k), prefix+"_"):
				fallback = varName(k) // CONTEXT7_API_KEY, not CONTEXT7_CONTEXT7_API_KEY
			}
			name := claim("", fallback, cred)
			cfg.Headers[k] = scheme + "${" + name + "}"
			imp.note("header %s: its value is not written here; export %s", k, name)
			out = append(out, Secret{Var: name, Value: cred, Server: cfg.ServerName, Key: "header " + k})
		}
		if u, moved := urlSecrets(cfg.URL, func(what, fallback, value string) string {
			if !strings.HasPrefix(fallback, prefix+"_") {
				fallback = prefix + "_" + fallback
			}
			name := claim("", fallback, value)
			imp.note("url: its %s is not written here; export %s", what, name)
			out = append(out, Secret{Var: name, Value: value, Server: cfg.ServerName, Key: "url " + what})
			return name
		}); moved {
			cfg.URL = u
		}
	}
	return out
}

// urlSecrets replaces the credentials of raw, a server's URL, with ${VAR}
// references named by claim (what it is, a fallback name, the value): a
// password in the user part (https://user:${SERVER_URL_PASSWORD}@host), a
// user part alone, which is often the key itself, and the value of a
// query parameter whose name marks a secret (?api_key=${SERVER_API_KEY}).
// It edits the text, not a parsed URL, so that the rest stays byte for
// byte and the references are not escaped; a value is exported as written
// (escaped), to be put back as it was. What already holds a $ is left.
func urlSecrets(raw string, claim func(what, fallback, value string) string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, false
	}
	prefix := ""
	moved := false
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		user, pass, hasPass := strings.Cut(rest[:at], ":")
		switch {
		case hasPass && pass != "" && !strings.Contains(pass, "$"):
			prefix = user + ":${" + claim("password", "URL_PASSWORD", pass) + "}"
		case !hasPass && user != "" && !strings.Contains(user, "$"):
			prefix = "${" + claim("user", "URL_USER", user) + "}"
		default:
			prefix = rest[:at]
		}
		moved = prefix != rest[:at]
		rest = prefix + rest[at:]
		end += len(prefix) - at
	}
	q := strings.IndexByte(rest[end:], '?')
	if q < 0 {
		return scheme + "://" + rest, moved
	}
	q += end + 1
	frag := ""
	query := rest[q:]
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query, frag = query[:i], query[i:]
	}
	pairs := strings.Split(query, "&")
	for i, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || v == "" || strings.Contains(v, "$") {
			continue
		}
		name := k
		if dec, err := url.QueryUnescape(k); err == nil {
			name = dec
		}
		if !stdio.LooksSecret(name, "") {
			continue
		}
		pairs[i] = k + "=${" + claim("query parameter "+name, varName(name), v) + "}"
		moved = true
	}
	return scheme + "://" + rest[:q] + strings.Join(pairs, "&") + frag, moved
}

// validVar is a name a shell can export.
var validVar = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// authScheme is the scheme word of an Authorization value (Bearer, Basic,
// Token...).
var authScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)

// varName turns "Brave_Search" or "X-Api-Key" into BRAVE_SEARCH or
// X_API_KEY.
func varName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToUpper(s) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "S_" + out
	}
	return out
}
