package mcpfold

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Config is the mcp-fold plugin's config.
type Config struct {
	// Prefix is the tool-name prefix that marks a tool as an MCP tool
	// (default "mcp__"); it must match ^[A-Za-z0-9_-]{1,64}$.
	Prefix string `yaml:"prefix" koanf:"prefix" json:"prefix"`
	// Keep lists name patterns that stay native in the prompt: `*` matches
	// any run of characters, everything else is literal, and a pattern
	// must match the whole name.
	Keep []string `yaml:"keep" koanf:"keep" json:"keep"`
	// Servers, when non-empty, is the whitelist of server names whose tools
	// are folded, cataloged and dispatchable; other servers stay native.
	Servers []string `yaml:"servers" koanf:"servers" json:"servers"`
	// DescriptionLimit caps each description in the mcp_list catalog, in
	// characters (default 200, at least 1).
	DescriptionLimit int `yaml:"descriptionLimit" koanf:"descriptionLimit" json:"descriptionLimit"`
}

// Defaults returns the config an empty entry gets.
func Defaults() Config {
	return Config{Prefix: "mcp__", DescriptionLimit: 200}
}

// prefixRule is the model function-name alphabet; the length (at most
// maxPrefix) is checked apart, as a counted repetition compiles to a 60 KB
// program that every command's start would allocate.
var prefixRule = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxPrefix = 64

// validPrefix says whether s is 1 to maxPrefix characters of prefixRule.
func validPrefix(s string) bool {
	return len(s) <= maxPrefix && prefixRule.MatchString(s)
}

// Validate checks cfg and returns every problem, each a host.KeyError
// naming its key, so that the host reports it at that key's line.
func (cfg *Config) Validate() error {
	var errs []error
	if !validPrefix(cfg.Prefix) {
		errs = append(errs, host.KeyErrorf("prefix", "%q must match %s (the model function-name alphabet), at most %d characters", cfg.Prefix, prefixRule, maxPrefix))
	}
	for i, k := range cfg.Keep {
		if k == "" {
			errs = append(errs, host.KeyErrorf(fmt.Sprintf("keep[%d]", i), "empty pattern: remove it or give a tool name (`*` is the only wildcard)"))
		}
	}
	for i, s := range cfg.Servers {
		// A name outside the serverName alphabet can match no server, and a
		// whitelist that matches nothing silently stops all folding.
		if !validPrefix(s) {
			errs = append(errs, host.KeyErrorf(fmt.Sprintf("servers[%d]", i), "%q is not a server name: give a serverName as the mcp-client entry has it (A-Z a-z 0-9 _ -)", s))
		}
	}
	if cfg.DescriptionLimit < 1 {
		errs = append(errs, host.KeyErrorf("descriptionLimit", "%d must be at least 1", cfg.DescriptionLimit))
	}
	return errors.Join(errs...)
}

// rules is a validated config, compiled for matching.
type rules struct {
	prefix  string
	keep    []string
	servers map[string]bool // nil: every server is allowed
	list    []string        // servers in config order
	limit   int
}

func compile(cfg Config) (*rules, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &rules{prefix: cfg.Prefix, keep: append([]string(nil), cfg.Keep...), limit: cfg.DescriptionLimit}
	if len(cfg.Servers) > 0 {
		r.servers = map[string]bool{}
		for _, s := range cfg.Servers {
			if !r.servers[s] {
				r.list = append(r.list, s)
			}
			r.servers[s] = true
		}
	}
	return r, nil
}

// kept reports whether name matches a keep pattern (tools.Match: the same
// `*` glob as the registry's masks and hook patterns).
func (r *rules) kept(name string) bool {
	for _, k := range r.keep {
		if tools.Match(k, name) {
			return true
		}
	}
	return false
}

// allowed reports whether the whitelist lets server through.
func (r *rules) allowed(server string) bool {
	return r.servers == nil || r.servers[server]
}

// isMCP reports whether name carries the prefix.
func (r *rules) isMCP(name string) bool { return strings.HasPrefix(name, r.prefix) }

// serverOf returns the MCP server of the registered tool d, or "" when d
// is not an MCP tool to fold: a meta-tool, a name without the prefix, or
// a tool whose registrant declared no server. The server is the one
// mcp-client declares in Origin.Server, never parsed from the name: a
// serverName may itself contain "__" ("a__b" and "a__c" are two servers).
func (r *rules) serverOf(d tools.Definition) string {
	if isMeta(d.Name) || !r.isMCP(d.Name) {
		return ""
	}
	return d.Origin.Server
}

// Meta-tool names.
const (
	listName = "mcp_list"
	callName = "mcp_call"
)

func isMeta(name string) bool { return name == listName || name == callName }

// verdict is what folding does with one assembled tool.
type verdict int

const (
	native verdict = iota // not an MCP tool, or a meta-tool
	fold                  // out of the prompt, reachable through the meta-tools
	keep                  // an MCP tool exempted by keep or servers
)

// judge applies the fold rule to the registered tool d, in order: a tool
// that is not an MCP tool (serverOf) stays native; a disabled server's
// tools fold whatever keep and servers say; otherwise a tool folds unless
// a keep pattern matches it or its server is not whitelisted.
func (r *rules) judge(d tools.Definition, g *gateState) verdict {
	server := r.serverOf(d)
	if server == "" {
		return native
	}
	if g.disabled(server) {
		return fold
	}
	if !r.kept(d.Name) && r.allowed(server) {
		return fold
	}
	return keep
}
