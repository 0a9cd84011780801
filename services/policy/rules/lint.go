package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// serverClaim is the claim kind of an MCP client's serverName.
const serverClaim = "serverName"

// Lint warns about rules that validate but can match nothing (a server
// no entry provides, a name in the wrong case: names are case-sensitive)
// or every call while rules follow them, which then never decide.
func Lint(rs []Rule, claims []host.Claim) []host.LintWarning {
	var servers []string
	for _, c := range claims {
		if c.Kind == serverClaim && c.Value != "" {
			servers = append(servers, c.Value)
		}
	}
	slices.Sort(servers)
	var ws []host.LintWarning
	for i, r := range rs {
		key := fmt.Sprintf("rules[%d]", i)
		for j, glob := range r.Servers {
			if w, ok := serverGlobWarning(glob, servers); !ok {
				ws = append(ws, host.LintWarning{Key: fmt.Sprintf("%s.servers[%d]", key, j), Message: w})
			}
		}
		for j, glob := range r.Tools {
			if w, ok := toolGlobWarning(glob, servers); !ok {
				ws = append(ws, host.LintWarning{Key: fmt.Sprintf("%s.tools[%d]", key, j), Message: w})
			}
		}
		if i < len(rs)-1 && r.matchesEverything() {
			ws = append(ws, host.LintWarning{Key: key, Message: fmt.Sprintf(
				"this rule matches every call, so the %d rule(s) after it never decide; give it a condition or make it the last", len(rs)-1-i)})
		}
	}
	return ws
}

// matchesEverything reports whether r has no condition a call can fail.
func (r *Rule) matchesEverything() bool {
	anyTool := len(r.Tools) == 0 || slices.Contains(r.Tools, "*")
	anyServer := len(r.Servers) == 0 // "*" still needs an MCP server's tool
	return anyTool && anyServer && len(r.Kinds) == 0 && len(r.Callers) == 0 && len(r.Annotations) == 0 && strings.TrimSpace(r.When) == ""
}

// serverGlobWarning checks a servers glob against the composition's
// serverNames: ok when one matches.
func serverGlobWarning(glob string, servers []string) (string, bool) {
	for _, s := range servers {
		if tools.Match(glob, s) {
			return "", true
		}
	}
	for _, s := range servers {
		if tools.Match(strings.ToLower(glob), strings.ToLower(s)) {
			return fmt.Sprintf("%q matches no server, and the rule none of its tools: the serverName is %q (names are case-sensitive)", glob, s), false
		}
	}
	return fmt.Sprintf("%q matches no server of this composition (%s), so the rule matches no call", glob, serverList(servers)), false
}

// toolGlobWarning checks a tools glob of an MCP server's tools
// (mcp__SERVER__…, SERVER written out) against the composition's
// serverNames; any other glob is left alone, its tools being known only
// once servers list them.
func toolGlobWarning(glob string, servers []string) (string, bool) {
	literal, _, _ := strings.Cut(glob, "*")
	rest, ok := strings.CutPrefix(literal, "mcp__")
	if !ok || !strings.Contains(rest, "__") {
		return "", true
	}
	for _, s := range servers {
		if strings.HasPrefix(literal, "mcp__"+s+"__") {
			return "", true
		}
	}
	for _, s := range servers {
		if strings.HasPrefix(strings.ToLower(literal), strings.ToLower("mcp__"+s+"__")) {
			return fmt.Sprintf("%q matches no tool: server %q names its tools mcp__%s__… (names are case-sensitive)", glob, s, s), false
		}
	}
	server, _, _ := strings.Cut(rest, "__")
	return fmt.Sprintf("%q matches no tool: no entry provides server %q (%s)", glob, server, serverList(servers)), false
}

func serverList(servers []string) string {
	if len(servers) == 0 {
		return "it has no MCP server"
	}
	return "its servers: " + strings.Join(servers, ", ")
}
