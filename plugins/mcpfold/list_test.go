package mcpfold

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func catalogOf(t *testing.T, res tools.Result) Catalog {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("mcp_list: %v", res.Err)
	}
	c, ok := res.Value.(Catalog)
	if !ok {
		t.Fatalf("value is %T (%v), want a Catalog", res.Value, res.Value)
	}
	return c
}

// shape reduces a catalog to server → tool names.
func shape(c Catalog) [][]string {
	var out [][]string
	for _, s := range c.Servers {
		row := []string{s.Server}
		for _, tl := range s.Tools {
			row = append(row, tl.Name)
		}
		out = append(out, row)
	}
	return out
}

func TestCatalogGroupsByServer(t *testing.T) {
	r := newRig(t)
	c := catalogOf(t, r.exec(listName, `{}`))
	want := [][]string{
		{"fs", "mcp__fs__list_directory", "mcp__fs__read_file", "mcp__fs__write_file"},
		{"github", "mcp__github__create_issue", "mcp__github__get_file_contents", "mcp__github__search_issues"},
	}
	if diff := cmp.Diff(want, shape(c)); diff != "" {
		t.Fatalf("catalog (-want +got):\n%s", diff)
	}
	for _, s := range c.Servers {
		for _, tl := range s.Tools {
			if tl.Parameters != nil {
				t.Fatalf("%s carries parameters without verbose", tl.Name)
			}
		}
	}
}

func TestCatalogRenderedAsIndentedJSON(t *testing.T) {
	// No HTML escaping: the model reads "<" and "&", not "\u003c".
	r := newRig(t, withTools(fakeTool{"mcp__fs__read_file", "Read <path> & return its contents.", `{}`}))
	got := text(r.exec(listName, `{}`))
	want := `{
  "servers": [
    {
      "server": "fs",
      "tools": [
        {
          "name": "mcp__fs__read_file",
          "description": "Read <path> & return its contents."
        }
      ]
    }
  ]
}`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("rendered catalog (-want +got):\n%s", diff)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"  spaced\n\tout   text ", 100, "spaced out text"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ch…"},
		{"abc", 1, "…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"emoji 😀😀😀 end", 8, "emoji 😀…"},
		{"😀😀", 2, "😀😀"},
	}
	for _, tt := range tests {
		got := truncate(tt.in, tt.limit)
		if got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("truncate(%q, %d) split a character: %q", tt.in, tt.limit, got)
		}
	}
}

func FuzzTruncate(f *testing.F) {
	for _, s := range []string{"eleven char", "日本語のテキスト", "emoji 😀😀😀 end", " a\t\nb ", "\xff\xfe😀"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 1 || limit > 1000 {
			return
		}
		got := truncate(s, limit)
		collapsed := collapse(s)
		if n := utf8.RuneCountInString(got); n > limit {
			t.Fatalf("truncate(%q, %d) = %q: %d characters", s, limit, got, n)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("truncate(%q, %d) = %q split a character", s, limit, got)
		}
		if body, cut := strings.CutSuffix(got, "…"); cut && got != collapsed {
			if !strings.HasPrefix(collapsed, body) || utf8.RuneCountInString(body) != limit-1 {
				t.Fatalf("truncate(%q, %d) = %q: want the first %d characters and …", s, limit, got, limit-1)
			}
		} else if got != collapsed {
			t.Fatalf("truncate(%q, %d) = %q, want it whole: %q", s, limit, got, collapsed)
		}
	})
}

func TestCatalogDescriptionLimit(t *testing.T) {
	long := fakeTool{"mcp__s__t", "word " + strings.Repeat("x", 300) + "\n\n  tail", `{"type":"object"}`}
	r := newRig(t, withTools(long), withConfig(func(c *Config) { c.DescriptionLimit = 20 }))
	c := catalogOf(t, r.exec(listName, `{}`))
	got := c.Servers[0].Tools[0].Description
	if want := "word " + strings.Repeat("x", 14) + "…"; got != want {
		t.Fatalf("description = %q, want %q", got, want)
	}
	// Expansion shows the full text.
	e := r.exec(listName, `{"tool":"mcp__s__t"}`).Value.(Expansion)
	if e.Tool.Description != long.desc {
		t.Fatalf("expanded description = %q, want the full one", e.Tool.Description)
	}
}

func TestCatalogServerFilterAndVerbose(t *testing.T) {
	r := newRig(t)
	c := catalogOf(t, r.exec(listName, `{"server":"fs","verbose":true}`))
	if diff := cmp.Diff([][]string{{"fs", "mcp__fs__list_directory", "mcp__fs__read_file", "mcp__fs__write_file"}}, shape(c)); diff != "" {
		t.Fatalf("filtered catalog (-want +got):\n%s", diff)
	}
	if got := string(c.Servers[0].Tools[1].Parameters); got != fleet[3].schema {
		t.Fatalf("verbose parameters = %s, want %s", got, fleet[3].schema)
	}
}

func TestCatalogArgumentNormalization(t *testing.T) {
	r := newRig(t)
	// Keys of the wrong type are ignored: a numeric server filters
	// nothing, a string verbose is not verbose, a non-string tool is not an
	// expansion. A non-object argument is the plain catalog.
	for _, args := range []string{`{"server":7,"verbose":"yes","tool":false}`, `[]`, `null`, ``, `"x"`} {
		c := catalogOf(t, r.exec(listName, args))
		if len(c.Servers) != 2 || c.Servers[0].Tools[0].Parameters != nil {
			t.Fatalf("args %s: got %v", args, shape(c))
		}
	}
}

// TestCatalogServerIsTheDeclaredOne: a tool's server is its
// Origin.Server, whatever its name looks like; a tool under the prefix
// that no server declared is not an MCP tool and stays out.
func TestCatalogServerIsTheDeclaredOne(t *testing.T) {
	r := newRig(t, withTools(), before(func(reg *tools.Registry, _ *commands.Registry) {
		registerOn(t, reg, nil, "a__b", fakeTool{"mcp__a__b__x", "", `{}`})
		registerOn(t, reg, nil, "a", fakeTool{"mcp__a__y", "", `{}`}, fakeTool{"mcp__a__deep__z", "", `{}`})
		registerOn(t, reg, nil, "solo", fakeTool{"mcp__solo", "", `{}`})
		registerOn(t, reg, nil, "", fakeTool{"mcp__nobody__w", "", `{}`})
	}))
	want := [][]string{{"a__b", "mcp__a__b__x"}, {"a", "mcp__a__deep__z", "mcp__a__y"}, {"solo", "mcp__solo"}}
	if diff := cmp.Diff(want, shape(catalogOf(t, r.exec(listName, `{}`)))); diff != "" {
		t.Fatalf("catalog (-want +got):\n%s", diff)
	}
	if names := r.names(testCaller); !containsName(names, "mcp__nobody__w") || containsName(names, "mcp__a__b__x") {
		t.Fatalf("a serverless tool must stay native and a server's fold: %v", names)
	}
	if got := errText(t, r.exec(callName, `{"tool":"mcp__nobody__w"}`)); !strings.Contains(got, "not an MCP server's tool") {
		t.Fatalf("mcp_call of a serverless tool: %q", got)
	}
	if got := errText(t, r.exec(listName, `{"tool":"mcp__nobody__w"}`)); !strings.Contains(got, "not an MCP server's tool") {
		t.Fatalf("mcp_list of a serverless tool: %q", got)
	}
}

func TestCatalogWhitelistAndMetaExcluded(t *testing.T) {
	r := newRig(t, withConfig(func(c *Config) { c.Servers = []string{"github"} }))
	c := catalogOf(t, r.exec(listName, `{}`))
	if diff := cmp.Diff([][]string{{"github", "mcp__github__create_issue", "mcp__github__get_file_contents", "mcp__github__search_issues"}}, shape(c)); diff != "" {
		t.Fatalf("whitelisted catalog (-want +got):\n%s", diff)
	}
	for _, s := range c.Servers {
		for _, tl := range s.Tools {
			if isMeta(tl.Name) {
				t.Fatalf("meta-tool %s in the catalog", tl.Name)
			}
		}
	}
}

func TestCatalogPathologicalPrefixExcludesMetaTools(t *testing.T) {
	r := newRig(t, withConfig(func(c *Config) { c.Prefix = "mcp_" }))
	c := catalogOf(t, r.exec(listName, `{}`))
	for _, s := range c.Servers {
		for _, tl := range s.Tools {
			if isMeta(tl.Name) {
				t.Fatalf("meta-tool %s in the catalog", tl.Name)
			}
		}
	}
	if got := errText(t, r.exec(listName, `{"tool":"mcp_call"}`)); got != `refusing to expand "mcp_call": meta-tools are not expandable through mcp_list` {
		t.Fatalf("expanding a meta-tool: %q", got)
	}
}

func TestExpansion(t *testing.T) {
	r := newRig(t)
	res := r.exec(listName, `{"tool":"mcp__github__create_issue","server":"fs","verbose":true}`)
	e, ok := res.Value.(Expansion)
	if !ok {
		t.Fatalf("value %T, want an Expansion (tool has priority)", res.Value)
	}
	want := Expansion{Tool: CatalogTool{Name: "mcp__github__create_issue", Description: fleet[0].desc, Parameters: json.RawMessage(issueSchema)}}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Fatalf("expansion (-want +got):\n%s", diff)
	}
}

func TestListErrors(t *testing.T) {
	disabledGH := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"github": 3, "fs": 4}, "disabled": []any{3}})}
	allDisabled := &memGate{raw: roundTrip(map[string]any{"serverIds": map[string]any{"github": 3, "fs": 4}, "disabled": []any{3, 4}})}
	tests := []struct {
		name  string
		opts  []rigOpt
		args  string
		want  string
		maybe bool // the did-you-mean part may follow
	}{
		{"meta", nil, `{"tool":"mcp_list"}`, `refusing to expand "mcp_list": meta-tools are not expandable through mcp_list`, false},
		{"no prefix", nil, `{"tool":"bash"}`, `"bash" is not an MCP tool (expected the "mcp__" prefix) — call mcp_list without arguments for the catalog`, false},
		{"not whitelisted", []rigOpt{withConfig(func(c *Config) { c.Servers = []string{"fs"} })}, `{"tool":"mcp__github__create_issue"}`,
			`"mcp__github__create_issue" belongs to server "github", which is not in the configured servers list`, false},
		{"disabled", []rigOpt{withStore(disabledGH)}, `{"tool":"mcp__github__create_issue"}`,
			`refusing to expand "mcp__github__create_issue": server "github" is disabled — it can be restored with "/mcp enable 3"`, false},
		{"unknown", nil, `{"tool":"mcp__github__nope"}`, `unknown MCP tool "mcp__github__nope" — the server may have re-synced; call mcp_list to refresh`, false},
		{"disabled server filter", []rigOpt{withStore(disabledGH)}, `{"server":"github"}`,
			`server "github" is disabled and hidden from the catalog — restore it with "/mcp enable 3"`, false},
		{"all disabled", []rigOpt{withStore(allDisabled)}, `{}`,
			`every MCP tool under the "mcp__" prefix belongs to a disabled server — restore one with /mcp enable <id>: "fs" ("/mcp enable 4"), "github" ("/mcp enable 3")`, false},
		{"none registered", []rigOpt{withTools(fleet[6])}, `{}`, `no MCP tools are registered under the "mcp__" prefix`, false},
		{"no such server", nil, `{"server":"gitlab"}`, `no MCP tools match server "gitlab"`, false},
		{"server outside whitelist", []rigOpt{withConfig(func(c *Config) { c.Servers = []string{"fs"} })}, `{"server":"github"}`, `no MCP tools match server "github"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.opts...)
			res := r.exec(listName, tt.args)
			if got := errText(t, res); got != tt.want {
				t.Fatalf("error text:\n got %s\nwant %s", got, tt.want)
			}
			if !strings.HasPrefix(text(res), tt.want) {
				t.Fatalf("rendered text %q does not start with the error", text(res))
			}
		})
	}
}

func TestListUnknownServerSuggests(t *testing.T) {
	r := newRig(t)
	res := r.exec(listName, `{"server":"githb"}`)
	if got, want := text(res), `no MCP tools match server "githb" — did you mean "github"?`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestErrorValueRendersAsPlainText(t *testing.T) {
	r := newRig(t)
	res := r.exec(listName, `{"tool":"bash"}`)
	if res.Err != nil {
		t.Fatalf("an mcp_list refusal must be a value, got error %v", res.Err)
	}
	want := `"bash" is not an MCP tool (expected the "mcp__" prefix) — call mcp_list without arguments for the catalog`
	if diff := cmp.Diff([]tools.Content{tools.Text(want)}, res.Content); diff != "" {
		t.Fatalf("content (-want +got):\n%s", diff)
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"create_issue", []string{"create", "issue"}},
		{"get-file-contents", []string{"get", "file", "content"}},
		{"createPullRequest", []string{"create", "pull", "request"}},
		{"HTTPServer v2", []string{"http", "server", "v2"}},
		{"Search issues, PRs", []string{"search", "issue", "pr"}},
		{"class access", []string{"class", "access"}},
		{"读取文件", []string{"读", "取", "文", "件"}},
		{"", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tokenize(tt.in)); diff != "" {
			t.Errorf("tokenize(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSearch(t *testing.T) {
	r := newRig(t)
	res := r.exec(listName, `{"query":"create an issue"}`)
	s, ok := res.Value.(Search)
	if !ok {
		t.Fatalf("value %T, want a Search", res.Value)
	}
	if len(s.Ranked) == 0 || s.Ranked[0].Name != "mcp__github__create_issue" {
		t.Fatalf("best match = %+v, want mcp__github__create_issue first", s.Ranked)
	}
	for i := 1; i < len(s.Ranked); i++ {
		if s.Ranked[i].Score > s.Ranked[i-1].Score {
			t.Fatalf("results not sorted by score: %+v", s.Ranked)
		}
	}
	if s.Total != len(s.Ranked) || s.Ranked[0].Server != "github" || s.Ranked[0].Score <= 0 {
		t.Fatalf("search result %+v", s)
	}

	// camelCase in the query meets snake_case in names.
	s = r.exec(listName, `{"query":"readFile"}`).Value.(Search)
	if len(s.Ranked) == 0 || s.Ranked[0].Name != "mcp__fs__read_file" {
		t.Fatalf("readFile: %+v", s.Ranked)
	}
	// The server filter narrows the search.
	s = r.exec(listName, `{"query":"file","server":"github"}`).Value.(Search)
	for _, h := range s.Ranked {
		if h.Server != "github" {
			t.Fatalf("server filter ignored: %+v", s.Ranked)
		}
	}
	// No match is an answer with a note, not an error.
	s = r.exec(listName, `{"query":"kubernetes"}`).Value.(Search)
	if s.Total != 0 || len(s.Ranked) != 0 || s.Note == "" {
		t.Fatalf("no-match search: %+v", s)
	}
}

func TestSearchTopTen(t *testing.T) {
	var many []fakeTool
	for i := range 30 {
		many = append(many, fakeTool{name: "mcp__s__issue_tool_" + string(rune('a'+i%26)) + string(rune('a'+i/26)), desc: "works on an issue", schema: `{}`})
	}
	many = append(many, fakeTool{"mcp__s__close_issue", "Close an issue. Closing an issue marks it done.", `{}`})
	r := newRig(t, withTools(many...))
	s := r.exec(listName, `{"query":"close issue"}`).Value.(Search)
	if len(s.Ranked) != searchLimit || s.Total != 31 {
		t.Fatalf("got %d ranked of total %d, want %d of 31", len(s.Ranked), s.Total, searchLimit)
	}
	if s.Ranked[0].Name != "mcp__s__close_issue" {
		t.Fatalf("best = %s", s.Ranked[0].Name)
	}
	if !strings.Contains(s.Note, "10 best of 31") {
		t.Fatalf("note = %q", s.Note)
	}
}

func TestBM25PrefersRareTerms(t *testing.T) {
	docs := []searchDoc{
		newDoc("a", "list_repos", "list the repositories"),
		newDoc("b", "list_issues", "list the issues"),
		newDoc("c", "list_branches", "list the branches"),
	}
	hits := rank(docs, "list issues")
	if len(hits) != 3 || docs[hits[0].index].name != "b" {
		t.Fatalf("hits = %+v, want b first", hits)
	}
	if hits[0].score <= hits[1].score {
		t.Fatalf("the rare term did not lift b: %+v", hits)
	}
	if got := rank(docs, "  ,, "); got != nil {
		t.Fatalf("empty query gave %+v", got)
	}
}

func TestSearchNameOutweighsDescription(t *testing.T) {
	// Same length, same words: only where "issue" stands differs, and a
	// word in the name says more than the same word in the description.
	docs := []searchDoc{
		newDoc("mcp__s__create_entry", "create_entry", "Make a new issue."),
		newDoc("mcp__s__create_issue", "create_issue", "Make a new entry."),
	}
	hits := rank(docs, "issue")
	if len(hits) != 2 || docs[hits[0].index].name != "mcp__s__create_issue" || hits[0].score <= hits[1].score {
		t.Fatalf("hits = %+v, want mcp__s__create_issue first with a higher score", hits)
	}
}
