package mcpservers

import (
	"fmt"
	"maps"
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
// scheme: "Bearer ${SERVER_TOKEN}".
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
	}
	return out
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
