package mcpservers

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// ConvertOpenCode converts one server of the mcp object of opencode.json:
// type local (command, a list: the program and its arguments; cwd;
// environment) or remote (url, headers), and enabled. opencode's
// {env:VAR} becomes ${VAR}.
func ConvertOpenCode(name string, entry any, taken func(serverName string) bool) (Imported, error) {
	fields, ok := entry.(map[string]any)
	if !ok {
		return Imported{}, errors.New("not a JSON object")
	}
	imp := Imported{Config: mcpclient.Defaults()}
	cfg := &imp.Config
	var typ string
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		v := fields[key]
		var err error
		switch key {
		case "type":
			typ, err = asString(v)
		case "command":
			var argv []string
			if argv, err = asStrings(v); err == nil && len(argv) > 0 {
				cfg.Command, cfg.Args = argv[0], argv[1:]
			}
		case "cwd":
			cfg.Cwd, err = asString(v)
		case "environment":
			cfg.Env, err = asStringMap(v)
		case "url":
			cfg.URL, err = asString(v)
		case "headers":
			cfg.Headers, err = asStringMap(v)
		case "enabled":
			var on bool
			on, err = asBool(v)
			imp.Disabled = !on
		case "timeout": // ms, for every request
			cfg.ToolCallTimeoutMs, err = asMs(v, 1)
		case "oauth":
			if v != false {
				imp.note("oauth: dsh-host logs in by itself when the server asks; set its client under oauth in the entry if it needs one (dsh-host login %s)", name)
			}
		default:
			imp.note("key %q has no equivalent and is ignored", key)
		}
		if err != nil {
			return imp, fmt.Errorf("%s: %w", key, err)
		}
	}
	switch typ {
	case "local":
		typ = mcpclient.TransportStdio
	case "remote":
		typ = "http"
	default:
		return imp, fmt.Errorf("type %q: want local or remote", typ)
	}
	return imp.finish(name, typ, taken, imp.convertOpenCodeVars)
}

// openCodeVar matches opencode's {env:VAR} and {file:path}.
// compiled at first use, as convert.go's patterns
var openCodeVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{(env|file):([^}]+)\}`) })

func (imp *Imported) convertOpenCodeVars(s *string) {
	*s = openCodeVar().ReplaceAllStringFunc(*s, func(m string) string {
		sub := openCodeVar().FindStringSubmatch(m)
		if sub[1] == "env" {
			return "${" + sub[2] + "}"
		}
		name := envName(strings.TrimSuffix(pathBase(sub[2]), ".txt"))
		imp.note("opencode reads {file:%s}; here it is the environment variable %s: set it to that file's content", sub[2], name)
		return "${" + name + "}"
	})
}

func pathBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// ConvertCodex converts one [mcp_servers.NAME] table of Codex's
// config.toml, as decoded from TOML (map[string]any; integers as int64):
// command, args, env, env_vars (variables passed from the environment, so
// ${VAR} here), cwd; or url, bearer_token_env_var (an Authorization:
// Bearer ${VAR} header), http_headers and env_http_headers; enabled,
// required (failOnStartupError), startup_timeout_sec or _ms,
// tool_timeout_sec, enabled_tools and disabled_tools (the tools filter).
func ConvertCodex(name string, entry any, taken func(serverName string) bool) (Imported, error) {
	fields, ok := entry.(map[string]any)
	if !ok {
		return Imported{}, errors.New("not a TOML table")
	}
	imp := Imported{Config: mcpclient.Defaults()}
	cfg := &imp.Config
	set := func(m *map[string]string, k, v string) {
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
	}
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		v := fields[key]
		var err error
		switch key {
		case "command":
			cfg.Command, err = asString(v)
		case "args":
			cfg.Args, err = asStrings(v)
		case "env":
			var env map[string]string
			env, err = asStringMap(v)
			for k, val := range env {
				set(&cfg.Env, k, val)
			}
		case "env_vars":
			var names []string
			names, err = asStrings(v)
			for _, n := range names {
				set(&cfg.Env, n, "${"+n+"}")
			}
		case "cwd":
			cfg.Cwd, err = asString(v)
		case "url":
			cfg.URL, err = asString(v)
		case "bearer_token_env_var":
			var n string
			n, err = asString(v)
			set(&cfg.Headers, "Authorization", "Bearer ${"+n+"}")
		case "http_headers":
			var h map[string]string
			h, err = asStringMap(v)
			for k, val := range h {
				set(&cfg.Headers, k, val)
			}
		case "env_http_headers":
			var h map[string]string
			h, err = asStringMap(v)
			for k, n := range h {
				set(&cfg.Headers, k, "${"+n+"}")
			}
		case "enabled":
			var on bool
			on, err = asBool(v)
			imp.Disabled = !on
		case "required":
			cfg.FailOnStartupError, err = asBool(v)
		case "startup_timeout_sec":
			cfg.StartupTimeoutMs, err = asMs(v, 1000)
		case "startup_timeout_ms":
			cfg.StartupTimeoutMs, err = asMs(v, 1)
		case "tool_timeout_sec":
			// Codex's is the whole call's limit: so is toolCallMaxMs, and
			// the silence a call may keep is no longer.
			cfg.ToolCallMaxMs, err = asMs(v, 1000)
			cfg.ToolCallTimeoutMs = cfg.ToolCallMaxMs
		case "enabled_tools":
			cfg.Tools.Include, err = asStrings(v)
		case "disabled_tools":
			cfg.Tools.Exclude, err = asStrings(v)
		default:
			imp.note("key %q has no equivalent and is ignored", key)
		}
		if err != nil {
			return imp, fmt.Errorf("%s: %w", key, err)
		}
	}
	typ := ""
	if cfg.Command == "" && cfg.URL != "" {
		typ = "http" // Codex speaks Streamable HTTP only, whatever the path
	}
	return imp.finish(name, typ, taken, func(*string) {})
}
