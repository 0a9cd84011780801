package mcpfold

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestCommandRegistration(t *testing.T) {
	r := newRig(t)
	list := r.cmds.List()
	want := []commands.Command{{Name: "mcp", Description: "Show MCP status; disable/enable MCP servers; log in to a server; trust a server's changed tools", Usage: "[list [server|tool] | config | disable <id> | enable <id> | login <id|serverName> | trust <id|serverName>]"}}
	if diff := cmp.Diff(want, list, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Handler" }, cmp.Ignore())); diff != "" {
		t.Fatalf("registered commands (-want +got):\n%s", diff)
	}
}

func TestCommandCollisionKeepsFolding(t *testing.T) {
	r := newRig(t, before(func(_ *tools.Registry, cmds *commands.Registry) {
		_, err := cmds.Register(testScope(t, "other"), commands.Command{Name: "mcp", Description: "someone else", Handler: func(context.Context, commands.Invocation) commands.Reply {
			return commands.Reply{Text: "theirs"}
		}})
		if err != nil {
			t.Fatal(err)
		}
	}))
	if !strings.Contains(r.logs.String(), "/mcp not registered") {
		t.Fatalf("no warning:\n%s", r.logs)
	}
	if got := r.run("").Text; got != "theirs" {
		t.Fatalf("the other /mcp was replaced: %q", got)
	}
	if names := r.names(testCaller); containsName(names, "mcp__fs__read_file") {
		t.Fatalf("folding stopped: %v", names)
	}
}

func TestNoCommandsService(t *testing.T) {
	r := newRig(t, withoutCommands())
	if names := r.names(testCaller); containsName(names, "mcp__fs__read_file") || !containsName(names, "mcp_list") {
		t.Fatalf("folding without commands: %v", names)
	}
}

func TestCommandParse(t *testing.T) {
	r := newRig(t)
	r.run("")
	for _, in := range []string{"", "list", "  list  ", "list fs", "list mcp__fs__read_file", "config", "disable 1", "enable 1"} {
		if reply := r.run(in); strings.HasPrefix(reply.Text, "Usage:") {
			t.Errorf("/mcp %q answered with usage", in)
		}
	}
	for _, in := range []string{"status", "list a b", "disable", "disable x", "disable 0", "disable 01", "disable -1", "enable 1 2", "config x", "help", "login", "login a b"} {
		reply := r.run(in)
		if !reply.Error || !strings.HasPrefix(reply.Text, "Usage: /mcp [list [server|tool] | config | disable <id> | enable <id> | login <id|serverName> | trust <id|serverName>]\n") {
			t.Errorf("/mcp %q = %+v, want the usage as an error", in, reply)
		}
	}
}

func TestOverview(t *testing.T) {
	fleetPlus := append([]fakeTool(nil), fleet...)
	// Characters, not bytes, and no HTML escaping: "é" counts once,
	// "<" and "&" once each.
	fleetPlus[0].desc = "Create a new <issue> & café.\n\n   " + strings.Repeat("Long text. ", 20)
	r := newRig(t, withTools(fleetPlus...), withConfig(func(c *Config) { c.Keep = []string{"mcp__fs__read_file"} }))
	got := r.run("").Text
	schemaChars := 0
	for _, f := range fleetPlus {
		if strings.HasPrefix(f.name, "mcp__") && f.name != "mcp__fs__read_file" {
			schemaChars += utf8.RuneCountInString(fmt.Sprintf(`{"name":%q,"description":%q,"parameters":%s}`, f.name, f.desc, f.schema))
		}
	}
	want := strings.Join([]string{
		"MCP servers/tools — 6 tool(s) across 2 server(s)",
		"[1] fs (3)",
		"  ├─ mcp__fs__list_directory — Get a detailed listing of all files and directories in a specified path.",
		"  ├─ mcp__fs__read_file — Read the complete contents of a file from the file system.",
		"  └─ mcp__fs__write_file — Create a new file or completely overwrite an existing file.",
		"[2] github (3)",
		"  ├─ mcp__github__create_issue — " + truncate(fleetPlus[0].desc, 100),
		"  ├─ mcp__github__get_file_contents — Get the contents of a file or directory from a GitHub repository.",
		"  └─ mcp__github__search_issues — Search issues and pull requests across GitHub repositories.",
		"",
		fmt.Sprintf("meta-tools: mcp_list/mcp_call live · folding ACTIVE — folded 5, kept 1 · ~%d chars of schema out of prompt", schemaChars),
	}, "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("overview (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(truncate(fleetPlus[0].desc, 100), "…") {
		t.Fatal("the long description was not cut")
	}
}

func TestHealthFooter(t *testing.T) {
	tests := []struct {
		name string
		opts []rigOpt
		want string
	}{
		{"nothing folded via keep", []rigOpt{withConfig(func(c *Config) { c.Keep = []string{"mcp__*"} })},
			"meta-tools: mcp_list/mcp_call live · folding INACTIVE (nothing folded) — 6 matching tool(s) stay native via keep/servers exemptions"},
		{"nothing folded via servers", []rigOpt{withConfig(func(c *Config) { c.Servers = []string{"gitlab"} })},
			"meta-tools: mcp_list/mcp_call live · folding INACTIVE (nothing folded) — 6 matching tool(s) stay native via keep/servers exemptions"},
		{"no MCP tools", []rigOpt{withTools(fleet[6])},
			"meta-tools: mcp_list/mcp_call live · folding INACTIVE (nothing folded) — no MCP tools match the configured prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.opts...)
			if got := r.run("").Text; !strings.HasSuffix(got, "\n"+tt.want) {
				t.Fatalf("footer:\n%s\nwant last line %q", got, tt.want)
			}
		})
	}
}

func TestFooterParityWithTheFold(t *testing.T) {
	// Whatever the config and gates, the footer's folded count is exactly
	// the number of schemas the fold takes out of the assembly.
	store := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"github": 1}, "disabled": []any{1}})}
	r := newRig(t, withStore(store), withConfig(func(c *Config) {
		c.Keep = []string{"mcp__github__search_*", "mcp__fs__read_file"}
		c.Servers = []string{"github"}
	}))
	unfolded := len(r.reg.List(testCaller))
	folded := unfolded - len(r.names(testCaller))
	footer := r.run("").Text
	if !strings.Contains(footer, fmt.Sprintf("folded %d, kept 3 ·", folded)) {
		t.Fatalf("footer disagrees with the fold (%d folded):\n%s", folded, footer)
	}
}

func TestLineCap(t *testing.T) {
	var many []fakeTool
	for i := range 450 {
		many = append(many, fakeTool{name: fmt.Sprintf("mcp__big__tool_%03d", i), desc: "x", schema: `{}`})
	}
	r := newRig(t, withTools(many...))
	lines := strings.Split(r.run("").Text, "\n")
	if len(lines) != lineCap {
		t.Fatalf("%d lines, want %d", len(lines), lineCap)
	}
	total := 1 + 1 + 450 + 2 // header, server, tools, blank + footer
	want := fmt.Sprintf(`… output truncated at 400 lines (%d dropped) — narrow with "/mcp list <server>"`, total-399)
	if lines[len(lines)-1] != want {
		t.Fatalf("last line %q, want %q", lines[len(lines)-1], want)
	}
	if capLines("a\nb") != "a\nb" {
		t.Fatal("short output was changed")
	}
}

func TestLineCapBoundary(t *testing.T) {
	numbered := func(n int) string {
		lines := make([]string, n)
		for i := range lines {
			lines[i] = fmt.Sprint(i + 1)
		}
		return strings.Join(lines, "\n")
	}
	tests := []struct {
		lines    int
		wantCut  bool
		wantDrop int
	}{
		{lineCap - 1, false, 0},
		{lineCap, false, 0},
		{lineCap + 1, true, 2}, // lines 400 and 401 give way to the hint
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.lines), func(t *testing.T) {
			in := numbered(tt.lines)
			got := capLines(in)
			if !tt.wantCut {
				if got != in {
					t.Fatalf("%d lines were changed", tt.lines)
				}
				return
			}
			lines := strings.Split(got, "\n")
			want := fmt.Sprintf(`… output truncated at %d lines (%d dropped) — narrow with "/mcp list <server>"`, lineCap, tt.wantDrop)
			if len(lines) != lineCap || lines[lineCap-2] != fmt.Sprint(lineCap-1) || lines[lineCap-1] != want {
				t.Fatalf("got %d lines ending %q, %q; want %d ending %q, %q", len(lines), lines[len(lines)-2], lines[len(lines)-1], lineCap, fmt.Sprint(lineCap-1), want)
			}
		})
	}
}

func TestIDSpaceExhausted(t *testing.T) {
	ids := map[string]any{}
	for i := 1; i <= maxID; i++ {
		ids[fmt.Sprintf("s%02d", i)] = i
	}
	r := newRig(t, withStore(&memGate{raw: roundTrip(map[string]any{"serverIds": ids})}))
	got := r.run("").Text
	for _, w := range []string{"[-] fs (3) — beyond the id cap", "[-] github (3) — beyond the id cap",
		"id space exhausted (99/99): 2 server(s) beyond the cap cannot be gated"} {
		if !strings.Contains(got, w) {
			t.Fatalf("overview lacks %q:\n%s", w, got)
		}
	}
}

func TestDetail(t *testing.T) {
	store := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"fs": 1, "github": 2}, "disabled": []any{2}})}
	r := newRig(t, withStore(store))
	tests := []struct {
		in, want string
		isErr    bool
	}{
		{"list fs", strings.Join([]string{
			`server "fs" — 3 tool(s)`,
			"id 1",
			"├─ mcp__fs__list_directory — Get a detailed listing of all files and directories in a specified path.",
			"├─ mcp__fs__read_file — Read the complete contents of a file from the file system.",
			"└─ mcp__fs__write_file — Create a new file or completely overwrite an existing file.",
		}, "\n"), false},
		{"list mcp__fs__read_file", strings.Join([]string{
			"mcp__fs__read_file (server: fs)",
			"Read the complete contents of a file from the file system.",
			"inputSchema:",
			"{\n  \"type\": \"object\",\n  \"properties\": {\n    \"path\": {\n      \"type\": \"string\"\n    }\n  },\n  \"required\": [\n    \"path\"\n  ]\n}",
		}, "\n"), false},
		{"list nope", `no MCP server or tool matches "nope" in this scope — run "/mcp" for the current tree`, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			reply := r.run(tt.in)
			if reply.Error != tt.isErr {
				t.Fatalf("Error = %v", reply.Error)
			}
			if diff := cmp.Diff(tt.want, reply.Text); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := r.run("list github").Text; !strings.Contains(got, `⏸ disabled (id 2)`) || !strings.Contains(got, `"/mcp enable 2"`) {
		t.Fatalf("disabled server detail:\n%s", got)
	}
	if got := r.run("list mcp__github__create_issue").Text; !strings.Contains(got, "⏸ server disabled") {
		t.Fatalf("disabled tool detail:\n%s", got)
	}
}

func TestDetailServerWinsOverTool(t *testing.T) {
	// "fs" names both the server of mcp__fs__read and the tool mcp__fs
	// (registered for server "fs" too); the server wins.
	r := newRig(t, withTools(fakeTool{"mcp__fs", "a tool named like a server", `{}`}, fakeTool{"mcp__fs__read", "", `{}`}))
	if got := r.run("list fs").Text; !strings.HasPrefix(got, `server "fs" — 2 tool(s)`) {
		t.Fatalf("%s", got)
	}
	if got := r.run("list mcp__fs__read").Text; got != "mcp__fs__read (server: fs)\ninputSchema:\n{}" {
		t.Fatalf("tool without a description:\n%q", got)
	}
}

func TestConfigView(t *testing.T) {
	store := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"github": 2, "old": 3}, "disabled": []any{2, 7}})}
	r := newRig(t, withStore(store), withConfig(func(c *Config) {
		c.Keep = []string{"mcp__github__search_*", "mcp__nope"}
		c.Servers = []string{"github", "gitlab"}
		c.DescriptionLimit = 80
	}))
	got := r.run("config").Text
	want := strings.Join([]string{
		`prefix: "mcp__" — 6 tool(s) match`,
		"descriptionLimit: 80",
		"keep:",
		"  mcp__github__search_* — 1 tool(s): mcp__github__search_issues",
		"  mcp__nope — matches no tool",
		"servers:",
		"  github ⏸ — 3 tool(s): mcp__github__create_issue, mcp__github__get_file_contents, mcp__github__search_issues",
		"  gitlab — no visible tools",
		`server ids (settings section "mcp-adapter"):`,
		"  [1] fs",
		"  [2] github ⏸ disabled",
		"  [3] old (no visible tools now)",
		"  [7] (no server) ⏸ disabled — the id stays reserved",
	}, "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("config (-want +got):\n%s", diff)
	}
	r = newRig(t, withoutSettings())
	if got := r.run("config").Text; !strings.Contains(got, "keep: none") || !strings.Contains(got, "servers: none listed") || !strings.HasSuffix(got, "server ids: unavailable — no settings service, so nothing can be disabled") {
		t.Fatalf("config without settings:\n%s", got)
	}
}

func TestCommandSeesTheCallersTools(t *testing.T) {
	r := newRig(t)
	caller := tools.Caller{Kind: "console", Mask: &tools.Mask{Deny: []string{"mcp__github__*"}}}
	got := r.cmds.Run(context.Background(), caller, "/mcp").Text
	if strings.Contains(got, "github") || !strings.HasPrefix(got, "MCP servers/tools — 3 tool(s) across 1 server(s)") {
		t.Fatalf("overview for a masked caller:\n%s", got)
	}
}
