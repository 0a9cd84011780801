package mcpfold

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

const (
	commandDescription = "Show MCP status; disable/enable MCP servers; log in to a server; trust a server's changed tools"
	commandUsage       = "[list [server|tool] | config | disable <id> | enable <id> | login <id|serverName> | trust <id|serverName>]"
	// lineCap bounds /mcp output; the last line is the truncation hint.
	lineCap = 400
	// treeDescLimit caps descriptions in the /mcp tree.
	treeDescLimit = 100
)

const usageText = "Usage: /mcp " + commandUsage + `
  /mcp                 servers and tools with their ids, and folding health
  /mcp list <name>     one server's tools, or one tool's description and input schema
  /mcp config          the effective prefix, keep, servers, descriptionLimit and the id inventory
  /mcp disable <id>    take a server out of every prompt, the catalog and dispatch
  /mcp enable <id>     restore it under the same id
  /mcp login <id|serverName>
                       log in to a remote server with OAuth in the browser, as
                       "dsh-host login <serverName>" does; it connects by itself after
  /mcp trust <id|serverName>
                       show the tools the server changed or added after they
                       were trusted, which the policy holds until then; run
                       again, approve what it showed (as "dsh-host trust
                       <serverName>" does)`

var idArg = regexp.MustCompile(`^[1-9][0-9]*$`)

func (a *adapter) command() commands.Command {
	return commands.Command{Name: "mcp", Description: commandDescription, Usage: commandUsage, Handler: a.runCommand}
}

func (a *adapter) runCommand(ctx context.Context, inv commands.Invocation) commands.Reply {
	f := strings.Fields(inv.Input)
	var reply commands.Reply
	switch {
	case len(f) == 0 || (len(f) == 1 && f[0] == "list"):
		reply = a.overview(inv.Caller)
	case len(f) == 2 && f[0] == "list":
		reply = a.detail(inv.Caller, f[1])
	case len(f) == 1 && f[0] == "config":
		reply = a.config(inv.Caller)
	case len(f) == 2 && (f[0] == "disable" || f[0] == "enable") && idArg.MatchString(f[1]):
		id, err := strconv.Atoi(f[1])
		if err != nil {
			id = maxID + 1 // too large for an int: no server carries it
		}
		reply = a.toggle(ctx, inv.Caller, id, f[0] == "disable")
	case len(f) == 2 && f[0] == "login":
		reply = a.login(ctx, inv.Caller, f[1])
	case len(f) == 2 && f[0] == "trust":
		reply = a.trust(ctx, inv, f[1])
	default:
		reply = commands.Reply{Text: usageText, Error: true}
	}
	reply.Text = capLines(reply.Text)
	return reply
}

// capLines keeps at most lineCap lines, the last one saying what was cut.
func capLines(text string) string {
	lines := strings.Split(text, "\n")
	if len(lines) <= lineCap {
		return text
	}
	dropped := len(lines) - (lineCap - 1)
	lines = append(lines[:lineCap-1], fmt.Sprintf(`… output truncated at %d lines (%d dropped) — narrow with "/mcp list <server>"`, lineCap, dropped))
	return strings.Join(lines, "\n")
}

// view is what one /mcp invocation sees: the caller's MCP tools by server,
// and the gate state with ids allocated for every live server.
type view struct {
	groups []group
	gate   *gateState
	ids    bool // a settings service exists, so servers have ids
}

// snapshot allocates ids for the live servers (persisting only when one was
// added; a failed write still renders with the ids it would have written).
func (a *adapter) snapshot(caller tools.Caller) view {
	v := view{groups: a.groups(a.mcpTools(caller)), gate: a.gate.Load(), ids: a.store != nil}
	if a.store == nil {
		return v
	}
	names := make([]string, len(v.groups))
	for i, g := range v.groups {
		names[i] = g.server
	}
	probe := v.gate.clone()
	if !probe.allocate(names) {
		return v
	}
	a.persistMu.Lock()
	g, err := a.store.update(func(g *gateState) (bool, error) { return g.allocate(names), nil })
	// The file read for the update may hold a hand edit the watch has not
	// delivered yet, so the disabled set may change here too.
	changed := err == nil && a.storeGate(g)
	a.persistMu.Unlock()
	if err != nil {
		a.log.Warn("mcp-fold: could not persist new server ids; showing them anyway", "section", section, "err", err)
		v.gate = &probe
		return v
	}
	if changed {
		a.reg.AssemblyChanged()
	}
	v.gate = &g
	return v
}

// heading is a server's line in the tree.
func (v view) heading(grp group) string {
	n := len(grp.tools)
	id := v.gate.idOf(grp.server)
	switch {
	case !v.ids:
		return fmt.Sprintf("%s (%d)", grp.server, n)
	case id == 0:
		return fmt.Sprintf("[-] %s (%d) — beyond the id cap", grp.server, n)
	case v.gate.disabled(grp.server):
		return fmt.Sprintf("[%d] %s ⏸ disabled — hides %d tool(s)", id, grp.server, n)
	default:
		return fmt.Sprintf("[%d] %s (%d)", id, grp.server, n)
	}
}

func treeLines(defs []tools.Definition, indent string) []string {
	var out []string
	for i, d := range defs {
		branch := "├─ "
		if i == len(defs)-1 {
			branch = "└─ "
		}
		line := indent + branch + d.Name
		if desc := truncate(d.Description, treeDescLimit); desc != "" {
			line += " — " + desc
		}
		out = append(out, line)
	}
	return out
}

// health is the folding-health footer. It judges with the same rule as the
// fold, over the same tools, so the two never disagree.
func (a *adapter) health(caller tools.Caller, v view) string {
	all := a.reg.List(caller)
	if !a.own() || !metaVisible(all, definitionName) {
		return "folding INACTIVE (fail-open) — full schemas are passing through"
	}
	folded, kept, chars := 0, 0, 0
	for _, d := range all {
		switch a.rules.judge(d, v.gate) {
		case fold:
			folded++
			chars += schemaChars(d)
		case keep:
			kept++
		}
	}
	const live = "meta-tools: mcp_list/mcp_call live · "
	switch {
	case folded > 0:
		return fmt.Sprintf(live+"folding ACTIVE — folded %d, kept %d · ~%d chars of schema out of prompt", folded, kept, chars)
	case kept > 0:
		return fmt.Sprintf(live+"folding INACTIVE (nothing folded) — %d matching tool(s) stay native via keep/servers exemptions", kept)
	default:
		return live + "folding INACTIVE (nothing folded) — no MCP tools match the configured prefix"
	}
}

// schemaChars is the length of d's model-facing schema as JSON, in
// characters (not bytes, not tokens: the unit the footer promises), without
// HTML escaping, which the prompt does not carry either.
func schemaChars(d tools.Definition) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(tools.Schema{Name: d.Name, Description: d.Description, Parameters: parameters(d)}) != nil {
		return 0
	}
	return utf8.RuneCount(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func (a *adapter) overview(caller tools.Caller) commands.Reply {
	v := a.snapshot(caller)
	total := 0
	for _, g := range v.groups {
		total += len(g.tools)
	}
	lines := []string{fmt.Sprintf("MCP servers/tools — %d tool(s) across %d server(s)", total, len(v.groups))}
	beyond := 0
	for _, g := range v.groups {
		lines = append(lines, v.heading(g))
		if v.ids && v.gate.idOf(g.server) == 0 {
			beyond++
		}
		if v.gate.disabled(g.server) {
			continue
		}
		lines = append(lines, treeLines(g.tools, "  ")...)
	}
	lines = append(lines, a.waitingLogins(v)...)
	lines = append(lines, a.withheld(caller)...)
	lines = append(lines, "", a.health(caller, v))
	if beyond > 0 {
		lines = append(lines, fmt.Sprintf("id space exhausted (%d/%d): %d server(s) beyond the cap cannot be gated", maxID, maxID, beyond))
	}
	return commands.Reply{Text: strings.Join(lines, "\n")}
}

// withheld is the overview's line for the MCP tools registered within
// caller's mask but not offered to it (tools.Registry.OnHide: the policy
// holds a tool its server changed after it was trusted, or its rules deny
// it): missing from the tree, they are named here with where to look.
func (a *adapter) withheld(caller tools.Caller) []string {
	offered := map[string]bool{}
	for _, d := range a.mcpTools(caller) {
		offered[d.Name] = true
	}
	var names []string
	for _, d := range a.reg.ListAll() {
		if a.rules.serverOf(d) != "" && caller.Mask.Allows(d.Name) && !offered[d.Name] {
			names = append(names, d.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	const shown = 10
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	return []string{fmt.Sprintf("withheld: %s — not offered (held by the policy until \"/mcp trust <server>\", or denied by its rules); \"/policy\" says why", list)}
}

func (a *adapter) detail(caller tools.Caller, name string) commands.Reply {
	v := a.snapshot(caller)
	for _, g := range v.groups {
		if g.server != name {
			continue
		}
		lines := []string{fmt.Sprintf("server %q — %d tool(s)", g.server, len(g.tools))}
		if v.ids {
			if id := v.gate.idOf(g.server); id == 0 {
				lines = append(lines, "no id: beyond the id cap, so it cannot be gated")
			} else if v.gate.disabled(g.server) {
				lines = append(lines, fmt.Sprintf("⏸ disabled (id %d): folded out of every prompt, hidden from mcp_list, refused by mcp_call and direct calls — \"/mcp enable %d\" restores it", id, id))
			} else {
				lines = append(lines, fmt.Sprintf("id %d", id))
			}
		}
		lines = append(lines, treeLines(g.tools, "")...)
		return commands.Reply{Text: strings.Join(lines, "\n")}
	}
	for _, g := range v.groups {
		for _, d := range g.tools {
			if d.Name != name {
				continue
			}
			lines := []string{fmt.Sprintf("%s (server: %s)", d.Name, g.server)}
			if v.gate.disabled(g.server) {
				lines = append(lines, fmt.Sprintf("⏸ server disabled — \"/mcp enable %d\" restores it", v.gate.idOf(g.server)))
			}
			if d.Description != "" {
				lines = append(lines, d.Description)
			}
			lines = append(lines, "inputSchema:", indentJSON(parameters(d)))
			return commands.Reply{Text: strings.Join(lines, "\n")}
		}
	}
	return commands.Reply{Text: fmt.Sprintf("no MCP server or tool matches %q in this scope — run \"/mcp\" for the current tree", name), Error: true}
}

func (a *adapter) config(caller tools.Caller) commands.Reply {
	v := a.snapshot(caller)
	r := a.rules
	var all []tools.Definition
	for _, g := range v.groups {
		all = append(all, g.tools...)
	}
	lines := []string{
		fmt.Sprintf("prefix: %q — %d tool(s) match", r.prefix, len(all)),
		fmt.Sprintf("descriptionLimit: %d", r.limit),
	}
	if len(r.keep) == 0 {
		lines = append(lines, "keep: none — every MCP tool folds")
	} else {
		lines = append(lines, "keep:")
		for _, k := range r.keep {
			var hits []string
			for _, d := range all {
				if tools.Match(k, d.Name) {
					hits = append(hits, d.Name)
				}
			}
			if len(hits) == 0 {
				lines = append(lines, fmt.Sprintf("  %s — matches no tool", k))
			} else {
				lines = append(lines, fmt.Sprintf("  %s — %d tool(s): %s", k, len(hits), strings.Join(hits, ", ")))
			}
		}
	}
	if r.servers == nil {
		lines = append(lines, "servers: none listed — every server is folded, cataloged and dispatchable")
	} else {
		lines = append(lines, "servers:")
		for _, s := range r.list {
			var hits []string
			for _, g := range v.groups {
				if g.server == s {
					for _, d := range g.tools {
						hits = append(hits, d.Name)
					}
				}
			}
			mark := ""
			if v.gate.disabled(s) {
				mark = " ⏸"
			}
			if len(hits) == 0 {
				lines = append(lines, fmt.Sprintf("  %s%s — no visible tools", s, mark))
			} else {
				lines = append(lines, fmt.Sprintf("  %s%s — %d tool(s): %s", s, mark, len(hits), strings.Join(hits, ", ")))
			}
		}
	}
	if !v.ids {
		lines = append(lines, "server ids: unavailable — no settings service, so nothing can be disabled")
		return commands.Reply{Text: strings.Join(lines, "\n")}
	}
	live := map[string]bool{}
	for _, g := range v.groups {
		live[g.server] = true
	}
	type idName struct {
		id   int
		name string
	}
	var ids []idName
	for name, id := range v.gate.ServerIDs {
		ids = append(ids, idName{id, name})
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].id < ids[j].id })
	lines = append(lines, fmt.Sprintf("server ids (settings section %q):", section))
	if len(ids) == 0 {
		lines = append(lines, "  none yet")
	}
	for _, x := range ids {
		line := fmt.Sprintf("  [%d] %s", x.id, x.name)
		if slices.Contains(v.gate.Disabled, x.id) {
			line += " ⏸ disabled"
		}
		if !live[x.name] {
			line += " (no visible tools now)"
		}
		lines = append(lines, line)
	}
	for _, id := range v.gate.Disabled {
		if _, ok := v.gate.nameOf(id); !ok {
			lines = append(lines, fmt.Sprintf("  [%d] (no server) ⏸ disabled — the id stays reserved", id))
		}
	}
	return commands.Reply{Text: strings.Join(lines, "\n")}
}

func (a *adapter) toggle(ctx context.Context, caller tools.Caller, id int, disable bool) commands.Reply {
	verb := "enable"
	if disable {
		verb = "disable"
	}
	if a.store == nil {
		return commands.Reply{Text: fmt.Sprintf("/mcp %s needs the settings service to persist the gate, and this host has none — add the settings plugin to the composition", verb), Error: true}
	}
	v := a.snapshot(caller)
	name, ok := v.gate.nameOf(id)
	if !ok {
		return commands.Reply{Text: fmt.Sprintf("no live MCP server carries id %d\n%s", id, usageText), Error: true}
	}
	live := false
	for _, g := range v.groups {
		live = live || g.server == name
	}
	if !live {
		return commands.Reply{Text: fmt.Sprintf("%q carries id %d but has no visible tools in this scope right now\n%s", name, id, usageText), Error: true}
	}
	if err := ctx.Err(); err != nil {
		return commands.Reply{Text: fmt.Sprintf("/mcp %s %d interrupted before persisting (%v) — state unchanged", verb, id, err), Error: true}
	}
	a.persistMu.Lock()
	changed := false
	g, err := a.store.update(func(g *gateState) (bool, error) {
		// The file may have moved since the snapshot; re-check the id.
		if n, ok := g.nameOf(id); !ok || n != name {
			return false, fmt.Errorf("id %d no longer names %q in the settings file (edited meanwhile); run /mcp for the current ids", id, name)
		}
		has := slices.Contains(g.Disabled, id)
		switch {
		case disable && !has:
			g.Disabled = append(g.Disabled, id)
			changed = true
		case !disable && has:
			g.Disabled = slices.DeleteFunc(g.Disabled, func(x int) bool { return x == id })
			changed = true
		}
		return changed, nil
	})
	assembly := err == nil && a.storeGate(g)
	a.persistMu.Unlock()
	if err != nil {
		return commands.Reply{Text: fmt.Sprintf("/mcp %s %d could not be persisted: %v — state unchanged", verb, id, err), Error: true}
	}
	// Outside persistMu: the registry calls the plugin's followers now.
	if assembly {
		a.reg.AssemblyChanged()
	}
	switch {
	case !changed && disable:
		return commands.Reply{Text: fmt.Sprintf("server %q (id %d) is already disabled — nothing changed", name, id)}
	case !changed:
		return commands.Reply{Text: fmt.Sprintf("server %q (id %d) is not disabled — nothing changed", name, id)}
	case disable:
		return commands.Reply{Text: fmt.Sprintf("server %q (id %d) disabled — its tools fold out of every prompt until \"/mcp enable %d\"", name, id, id)}
	default:
		return commands.Reply{Text: fmt.Sprintf("server %q (id %d) enabled — back to normal folding/catalog/dispatch under the same id", name, id)}
	}
}
