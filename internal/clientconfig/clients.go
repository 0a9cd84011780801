package clientconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// format is how a client's file is written.
type format int

const (
	formatJSON  format = iota // strict JSON
	formatJSONC               // JSON with comments and trailing commas
	formatTOML                // Codex's config.toml
)

// Target is what a client is pointed at: this composition through a
// `dsh-host serve --stdio` the client starts, or a running HTTP gateway.
type Target struct {
	// Executable is the absolute path of the dsh-host to start.
	Executable string
	// Composition is the composition's absolute path.
	Composition string
	// URL, when set, is a running gateway's MCP endpoint, used instead.
	URL string
	// TokenEnv names the variable holding the gateway's bearer token, for
	// URL; the client reads it from its own environment.
	TokenEnv string
}

// args is the command line after the executable: serve over stdio, with
// a name limit when the client's budget is below the gateway's default.
func (t Target) args(nameLimit int) []string {
	a := []string{"serve", "--stdio"}
	if nameLimit > 0 {
		a = append(a, "--name-limit", strconv.Itoa(nameLimit))
	}
	return append(a, "-c", t.Composition)
}

// Env is what the location of a client's file depends on.
type Env struct {
	// Home is the home directory.
	Home string
	// Getenv reads the environment (CODEX_HOME, XDG_CONFIG_HOME,
	// CLAUDE_CONFIG_DIR, APPDATA); nil reads nothing.
	Getenv func(string) string
	// GOOS is the platform; "" is this one.
	GOOS string
}

func (e Env) get(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

// xdgConfig is $XDG_CONFIG_HOME, else ~/.config.
func (e Env) xdgConfig() string {
	if d := e.get("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(e.Home, ".config")
}

// client is what connect knows of one MCP client.
type client struct {
	name   string
	format format
	// user is the user-wide file; project, the file in a project's
	// directory. Either may return several candidates: the first that
	// exists is used, else the first.
	user    func(Env) []string
	project func(dir string) []string
	// list is the path of the object that holds the servers.
	list func(doc any) []string
	// entry is the server entry for t, as JSON values; tables, for TOML.
	entry func(t Target, nameLimit int) ordered
	// prefix is how many characters the client adds to a tool's name
	// besides the server's name, and budget the longest name it takes:
	// the gateway's names are cut to fit (--name-limit).
	prefix, budget int
	// skeleton is a new file's content.
	skeleton string
	// note is what the user should know to have the client use it.
	note string
}

// gatewayNameLimit is serve's default --name-limit.
const gatewayNameLimit = 48

// nameLimit is the --name-limit the client needs for an entry called
// name, or 0 when the gateway's default fits.
func (c *client) nameLimit(name string) int {
	n := c.budget - c.prefix - len(name)
	if n >= gatewayNameLimit {
		return 0
	}
	return max(n, 1)
}

func bearer(t Target, ref string) ordered {
	if t.TokenEnv == "" {
		return nil
	}
	return ordered{{"Authorization", "Bearer " + ref}}
}

// withHeaders appends headers to e when there are any.
func withHeaders(e ordered, h ordered) ordered {
	if h != nil {
		e = append(e, kv{"headers", h})
	}
	return e
}

func fixed(list ...string) func(any) []string { return func(any) []string { return list } }

// clients is every client connect writes, in the order --list shows them.
var clients = []*client{
	{
		name:   "claude-code",
		format: formatJSON,
		user: func(e Env) []string {
			if d := e.get("CLAUDE_CONFIG_DIR"); filepath.IsAbs(d) {
				return []string{filepath.Join(d, ".claude.json")}
			}
			return []string{filepath.Join(e.Home, ".claude.json")}
		},
		project: func(dir string) []string { return []string{filepath.Join(dir, ".mcp.json")} },
		list:    fixed("mcpServers"),
		entry: func(t Target, limit int) ordered {
			if t.URL != "" {
				return withHeaders(ordered{{"type", "http"}, {"url", t.URL}}, bearer(t, "${"+t.TokenEnv+"}"))
			}
			return ordered{{"type", "stdio"}, {"command", t.Executable}, {"args", t.args(limit)}, {"env", ordered{}}}
		},
		prefix: len("mcp____"), budget: 64,
		skeleton: "{}\n",
	},
	{
		name:   "codex",
		format: formatTOML,
		user: func(e Env) []string {
			if d := e.get("CODEX_HOME"); filepath.IsAbs(d) {
				return []string{filepath.Join(d, "config.toml")}
			}
			return []string{filepath.Join(e.Home, ".codex", "config.toml")}
		},
		project: func(dir string) []string { return []string{filepath.Join(dir, ".codex", "config.toml")} },
		list:    fixed("mcp_servers"),
		entry: func(t Target, limit int) ordered {
			if t.URL != "" {
				e := ordered{{"url", t.URL}}
				if t.TokenEnv != "" {
					e = append(e, kv{"bearer_token_env_var", t.TokenEnv})
				}
				return e
			}
			return ordered{{"command", t.Executable}, {"args", t.args(limit)}}
		},
		prefix: len("mcp____"), budget: 64,
	},
	{
		name:   "gemini",
		format: formatJSONC, // Gemini CLI strips comments from settings.json
		user:   func(e Env) []string { return []string{filepath.Join(e.Home, ".gemini", "settings.json")} },
		project: func(dir string) []string {
			return []string{filepath.Join(dir, ".gemini", "settings.json")}
		},
		list: fixed("mcpServers"),
		entry: func(t Target, limit int) ordered {
			if t.URL != "" {
				return withHeaders(ordered{{"httpUrl", t.URL}}, bearer(t, "$"+t.TokenEnv))
			}
			return ordered{{"command", t.Executable}, {"args", t.args(limit)}}
		},
		prefix: len("mcp__"), budget: 64,
		skeleton: "{}\n",
		note:     "Gemini CLI starts MCP servers only in folders it trusts (its /permissions command, or ~/.gemini/trustedFolders.json)",
	},
	{
		name:   "opencode",
		format: formatJSONC,
		user: func(e Env) []string {
			d := filepath.Join(e.xdgConfig(), "opencode")
			return []string{filepath.Join(d, "opencode.json"), filepath.Join(d, "opencode.jsonc")}
		},
		project: func(dir string) []string {
			return []string{filepath.Join(dir, "opencode.json"), filepath.Join(dir, "opencode.jsonc")}
		},
		list: func(doc any) []string {
			// opencode's newer configs nest the servers under mcp.servers.
			if m, ok := doc.(map[string]any); ok {
				if mcp, ok := m["mcp"].(map[string]any); ok {
					if s, ok := mcp["servers"].(map[string]any); ok && !isOpenCodeServer(s) {
						return []string{"mcp", "servers"}
					}
				}
			}
			return []string{"mcp"}
		},
		entry: func(t Target, limit int) ordered {
			if t.URL != "" {
				return withHeaders(ordered{{"type", "remote"}, {"url", t.URL}, {"enabled", true}}, bearer(t, "{env:"+t.TokenEnv+"}"))
			}
			return ordered{{"type", "local"}, {"command", append([]string{t.Executable}, t.args(limit)...)}, {"enabled", true}}
		},
		prefix: len("_"), budget: 64,
		skeleton: "{\n  \"$schema\": \"https://opencode.ai/config.json\"\n}\n",
	},
	{
		name:    "cursor",
		format:  formatJSON,
		user:    func(e Env) []string { return []string{filepath.Join(e.Home, ".cursor", "mcp.json")} },
		project: func(dir string) []string { return []string{filepath.Join(dir, ".cursor", "mcp.json")} },
		list:    fixed("mcpServers"),
		entry: func(t Target, limit int) ordered {
			if t.URL != "" {
				return withHeaders(ordered{{"url", t.URL}}, bearer(t, "${env:"+t.TokenEnv+"}"))
			}
			return ordered{{"command", t.Executable}, {"args", t.args(limit)}}
		},
		// Cursor drops a tool whose server and tool names together
		// pass 60 characters.
		prefix: len("_"), budget: 60,
		skeleton: "{}\n",
	},
	{
		name:   "vscode",
		format: formatJSONC,
		user: func(e Env) []string {
			switch e.goos() {
			case "darwin":
				return []string{filepath.Join(e.Home, "Library", "Application Support", "Code", "User", "mcp.json")}
			case "windows":
				if d := e.get("APPDATA"); d != "" {
					return []string{filepath.Join(d, "Code", "User", "mcp.json")}
				}
			}
			return []string{filepath.Join(e.xdgConfig(), "Code", "User", "mcp.json")}
		},
		project: func(dir string) []string { return []string{filepath.Join(dir, ".vscode", "mcp.json")} },
		list:    fixed("servers"),
		entry: func(t Target, limit int) ordered {
			if t.URL != "" {
				return withHeaders(ordered{{"type", "http"}, {"url", t.URL}}, bearer(t, "${env:"+t.TokenEnv+"}"))
			}
			return ordered{{"type", "stdio"}, {"command", t.Executable}, {"args", t.args(limit)}}
		},
		prefix: len("mcp__"), budget: 64,
		skeleton: "{}\n",
	},
}

// isOpenCodeServer reports whether m looks like one opencode server entry
// (so that a server called "servers" is not taken for the newer nesting).
func isOpenCodeServer(m map[string]any) bool {
	_, typ := m["type"].(string)
	return typ
}

// Clients lists the names of the clients connect writes.
func Clients() []string {
	var out []string
	for _, c := range clients {
		out = append(out, c.name)
	}
	return out
}

func findClient(name string) (*client, error) {
	for _, c := range clients {
		if c.name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("unknown client %q; want one of %s", name, strings.Join(Clients(), ", "))
}

// file returns the client's file: the first candidate that exists, else
// the first.
func (c *client) file(env Env, project string) string {
	var cands []string
	if project != "" {
		cands = c.project(project)
	} else {
		cands = c.user(env)
	}
	for _, p := range cands {
		if _, err := os.Lstat(p); err == nil {
			return p
		}
	}
	return cands[0]
}
