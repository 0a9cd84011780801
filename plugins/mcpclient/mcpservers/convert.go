// Package mcpservers converts the server entries other MCP clients write
// (the mcpServers object of Claude Code, Claude Desktop, Cursor and Gemini
// CLI, the servers object of VS Code, the mcp object of opencode.json,
// the [mcp_servers] tables of Codex's config.toml) into mcp-client
// configs, for `dsh-host import`, and keeps their inline secrets out of
// the composition (MoveSecrets).
package mcpservers

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// Imported is one server of another MCP client's configuration, converted.
type Imported struct {
	// Config is mcpclient.Defaults() with the server's own fields set.
	Config mcpclient.Config
	// Disabled is true when the other client has the server turned off.
	Disabled bool
	// Notes say what was renamed, rewritten or dropped, and why.
	Notes []string
}

// Convert converts the entry of the server called name, as decoded
// from JSON (a map[string]any; numbers as float64 or json.Number). Its
// serverName is name made to match the serverName rule (see ServerNameFor),
// avoiding the names taken reports as used. VS Code's ${env:VAR} becomes
// ${VAR}, and ${input:NAME} and ${workspaceFolder} become environment
// variables too, each with a note. The error, when not nil, says why the
// server cannot be imported (an SSE server, neither a command nor a url, a
// value of the wrong type).
func Convert(name string, entry any, taken func(serverName string) bool) (Imported, error) {
	fields, ok := entry.(map[string]any)
	if !ok {
		return Imported{}, errors.New("not a JSON object")
	}
	imp := Imported{Config: mcpclient.Defaults()}
	cfg := &imp.Config
	var typ, httpURL string
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		v := fields[key]
		var err error
		switch key {
		case "type", "transport":
			typ, err = asString(v)
		case "command":
			cfg.Command, err = asString(v)
		case "args":
			cfg.Args, err = asStrings(v)
		case "env":
			cfg.Env, err = asStringMap(v)
		case "cwd":
			cfg.Cwd, err = asString(v)
		case "url", "serverUrl":
			cfg.URL, err = asString(v)
		case "httpUrl": // Gemini CLI: Streamable HTTP, taking precedence over url
			httpURL, err = asString(v)
		case "headers":
			cfg.Headers, err = asStringMap(v)
		case "disabled":
			var ok bool
			if imp.Disabled, ok = v.(bool); !ok {
				err = errors.New("want true or false")
			}
		case "includeTools": // Gemini CLI
			cfg.Tools.Include, err = asStrings(v)
		case "excludeTools":
			cfg.Tools.Exclude, err = asStrings(v)
		case "timeout": // Gemini CLI: a request's timeout, in ms
			cfg.ToolCallTimeoutMs, err = asMs(v, 1)
		case "envFile":
			imp.note("envFile is not supported: put those variables in the environment of dsh-host, or in env")
		default:
			imp.note("key %q has no equivalent and is ignored", key)
		}
		if err != nil {
			return imp, fmt.Errorf("%s: %w", key, err)
		}
	}
	if httpURL != "" {
		if cfg.URL != "" {
			imp.note("httpUrl and url are both set: httpUrl is used, as Gemini CLI does")
		}
		cfg.URL, typ = httpURL, "http"
	}
	for _, m := range []map[string]string{cfg.Env, cfg.Headers} {
		for k, v := range m {
			m[k] = bareVars(v)
		}
	}
	for i, a := range cfg.Args {
		if bareVar.MatchString(a) {
			cfg.Args[i] = "${" + a[1:] + "}"
		}
	}
	cfg.URL = urlBareVar().ReplaceAllString(cfg.URL, "$1$${$2}")
	return imp.finish(name, typ, taken, imp.convertVars)
}

// bareVar is one $VAR and nothing else.
var bareVar = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`)

// urlBareVar is a $VAR that starts a part of a URL (a query value, a
// path segment, a password), as Gemini CLI expands it there. It and
// vscodeVar compile at first use, not in the package initialisation every
// command pays (issue 44): only an import reads them.
var urlBareVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([=/:])\$([A-Za-z_][A-Za-z0-9_]*)\b`) })

// bareVars rewrites each space-separated word of v that is one $VAR as
// ${VAR}: Gemini CLI reads $VAR as ${VAR} ("Bearer $GW_TOKEN"), and the
// composition expands only ${VAR}. A $ inside a word ("pa$word") is
// left as it is: there it is more likely a character of a secret.
func bareVars(v string) string {
	if !strings.Contains(v, "$") {
		return v
	}
	words := strings.Split(v, " ")
	for i, w := range words {
		if bareVar.MatchString(w) {
			words[i] = "${" + w[1:] + "}"
		}
	}
	return strings.Join(words, " ")
}

// finish checks the transport typ names (or that the fields imply),
// drops the fields it ignores, rewrites the variables of every string
// with convert, and names the server.
func (imp *Imported) finish(name, typ string, taken func(serverName string) bool, convert func(*string)) (Imported, error) {
	cfg := &imp.Config
	switch strings.ToLower(typ) {
	case "sse":
		cfg.Transport = mcpclient.TransportSSE
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		cfg.Transport = mcpclient.TransportStreamableHTTP
	case "stdio":
		cfg.Transport = mcpclient.TransportStdio
	case "":
		switch {
		case cfg.Command != "":
			cfg.Transport = mcpclient.TransportStdio
		case cfg.URL != "":
			cfg.Transport = mcpclient.TransportStreamableHTTP
			if strings.HasSuffix(strings.TrimRight(cfg.URL, "/"), "/sse") {
				cfg.Transport = mcpclient.TransportSSE
				imp.note("the url ends in /sse, which usually means a legacy SSE server: imported with transport: sse; if the server speaks Streamable HTTP, use transport: streamable-http")
			}
		}
	default:
		return *imp, fmt.Errorf("unknown type %q", typ)
	}
	switch cfg.Transport {
	case mcpclient.TransportStdio:
		if cfg.Command == "" {
			return *imp, errors.New("stdio server without a command")
		}
		if cfg.URL != "" || len(cfg.Headers) > 0 {
			imp.note("url and headers are ignored for a stdio server")
			cfg.URL, cfg.Headers = "", nil
		}
	case mcpclient.TransportStreamableHTTP, mcpclient.TransportSSE:
		if cfg.URL == "" {
			return *imp, errors.New("HTTP server without a url")
		}
		if cfg.Command != "" || len(cfg.Args) > 0 || len(cfg.Env) > 0 || cfg.Cwd != "" {
			imp.note("command, args, env and cwd are ignored for an HTTP server")
			cfg.Command, cfg.Args, cfg.Env, cfg.Cwd = "", nil, nil, ""
		}
	default:
		return *imp, errors.New("neither a command (stdio) nor a url (HTTP)")
	}
	convert(&cfg.Command)
	convert(&cfg.Cwd)
	convert(&cfg.URL)
	for i := range cfg.Args {
		convert(&cfg.Args[i])
	}
	for _, m := range []map[string]string{cfg.Env, cfg.Headers} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v := m[k]
			convert(&v)
			m[k] = v
		}
	}
	cfg.ServerName = ServerNameFor(name, taken)
	switch {
	case cfg.ServerName == name:
	case mcpclient.ValidServerName(name):
		imp.note("%q is renamed %q: the id %q is in use", name, cfg.ServerName, name)
	default:
		imp.note("%q is renamed %q: ids and serverNames match %s", name, cfg.ServerName, mcpclient.ServerNameRule)
	}
	if cfg.Transport == mcpclient.TransportStdio {
		imp.grantKnown()
	}
	return *imp, nil
}

func (imp *Imported) note(format string, args ...any) {
	imp.Notes = append(imp.Notes, fmt.Sprintf(format, args...))
}

// ServerNameFor returns name made to match the serverName rule, which also
// makes it a valid composition entry id: every run of other characters
// becomes "_", leading "_" and "-" and trailing "_" go, and it is cut to
// the rule's length ("server" if nothing is left). When taken reports the
// result as used, a suffix _2, _3... is added (within the length).
func ServerNameFor(name string, taken func(serverName string) bool) string {
	var b strings.Builder
	replaced := false
	for _, r := range name {
		if mcpclient.ValidServerName(string(r)) {
			b.WriteRune(r)
			replaced = false
		} else if !replaced {
			b.WriteByte('_')
			replaced = true
		}
	}
	// An entry id starts with a letter or a digit.
	id := strings.TrimRight(strings.TrimLeft(b.String(), "_-"), "_")
	id = fit(id, "")
	if id == "" {
		id = "server"
	}
	out := id
	for n := 2; taken != nil && taken(out); n++ {
		out = fit(id, "_"+strconv.Itoa(n))
	}
	return out
}

// fit returns base, cut as little as needed for base+suffix to match the
// serverName rule, followed by suffix.
func fit(base, suffix string) string {
	for len(base) > 0 && !mcpclient.ValidServerName(base+suffix) {
		base = base[:len(base)-1]
	}
	return base + suffix
}

// vscodeVar matches VS Code's ${env:VAR}, ${input:id} and ${workspaceFolder}
// style variables (a colon, or a name the composition cannot expand).
var vscodeVar = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{(env|input):([^}]+)\}|\$\{(workspaceFolder|workspaceFolderBasename|userHome|pathSeparator)\}`)
})

// convertVars rewrites VS Code variables in *s into the composition's
// ${VAR} syntax; ${VAR} and ${VAR:-default} (Claude Code) pass through.
func (imp *Imported) convertVars(s *string) {
	*s = vscodeVar().ReplaceAllStringFunc(*s, func(m string) string {
		sub := vscodeVar().FindStringSubmatch(m)
		switch {
		case sub[1] == "env":
			return "${" + sub[2] + "}"
		case sub[1] == "input":
			name := envName(sub[2])
			imp.note("VS Code prompts for input %q; here it is the environment variable %s", sub[2], name)
			return "${" + name + "}"
		case sub[3] == "userHome":
			return "${HOME}"
		default:
			name := envName(sub[3])
			imp.note("${%s} is the environment variable %s here (default: the current directory)", sub[3], name)
			return "${" + name + ":-.}"
		}
	})
}

// envName turns "api-key" or "workspaceFolder" into API_KEY or
// WORKSPACE_FOLDER.
func envName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func asString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, not %s", jsonType(v))
	}
	return s, nil
}

func asStrings(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, not %s", jsonType(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, err := asString(e)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = s
	}
	return out, nil
}

// asStringMap decodes an object of scalars; numbers and booleans become
// their text, null the empty string.
func asStringMap(v any) (map[string]string, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an object, not %s", jsonType(v))
	}
	out := make(map[string]string, len(obj))
	for k, e := range obj {
		switch e := e.(type) {
		case string:
			out[k] = e
		case json.Number:
			out[k] = e.String()
		case float64:
			out[k] = strconv.FormatFloat(e, 'f', -1, 64)
		case int64: // TOML
			out[k] = strconv.FormatInt(e, 10)
		case bool:
			out[k] = strconv.FormatBool(e)
		case nil:
			out[k] = ""
		default:
			return nil, fmt.Errorf("%s: want a string, not %s", k, jsonType(e))
		}
	}
	return out, nil
}

// jsonType names the JSON type of a decoded value, for errors.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number, int64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// asMs decodes a positive number of units (1 for milliseconds, 1000 for
// seconds) as milliseconds.
func asMs(v any, unit float64) (int, error) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, err
		}
	case float64:
		f = n
	case int64:
		f = float64(n)
	default:
		return 0, fmt.Errorf("want a number, not %s", jsonType(v))
	}
	ms := f * unit
	if ms < 1 || ms > math.MaxInt32 {
		return 0, fmt.Errorf("%v is out of range", v)
	}
	return int(ms), nil
}

func asBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, errors.New("want true or false")
	}
	return b, nil
}
