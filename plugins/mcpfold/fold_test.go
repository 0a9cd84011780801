package mcpfold

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestFoldReplacesMCPSchemasWithMetaTools(t *testing.T) {
	r := newRig(t)
	want := []string{"bash", "mcp_call", "mcp_list"}
	if diff := cmp.Diff(want, r.names(testCaller)); diff != "" {
		t.Fatalf("assembled tools (-want +got):\n%s", diff)
	}
	// Folding changes only the prompt: every tool stays registered.
	if _, ok := r.reg.Get("mcp__github__create_issue"); !ok {
		t.Fatal("a folded tool was unregistered")
	}
}

func TestFoldRule(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*Config)
		gate gateState
		want []string
	}{
		{
			name: "keep glob and exact name stay native",
			cfg:  func(c *Config) { c.Keep = []string{"mcp__github__search_*", "mcp__fs__read_file"} },
			want: []string{"bash", "mcp__fs__read_file", "mcp__github__search_issues", "mcp_call", "mcp_list"},
		},
		{
			name: "servers whitelist leaves other servers native",
			cfg:  func(c *Config) { c.Servers = []string{"fs"} },
			want: []string{"bash", "mcp__github__create_issue", "mcp__github__get_file_contents", "mcp__github__search_issues", "mcp_call", "mcp_list"},
		},
		{
			name: "disabled server folds despite keep and servers",
			cfg: func(c *Config) {
				c.Keep = []string{"mcp__github__*"}
				c.Servers = []string{"fs"}
			},
			gate: gateState{ServerIDs: map[string]int{"github": 1}, Disabled: []int{1}},
			want: []string{"bash", "mcp_call", "mcp_list"},
		},
		{
			name: "disabled id without a mapping disables nothing",
			cfg:  func(c *Config) { c.Keep = []string{"mcp__github__*"} },
			gate: gateState{ServerIDs: map[string]int{"fs": 2}, Disabled: []int{1}},
			want: []string{"bash", "mcp__github__create_issue", "mcp__github__get_file_contents", "mcp__github__search_issues", "mcp_call", "mcp_list"},
		},
		{
			name: "pathological prefix never folds the meta-tools",
			cfg:  func(c *Config) { c.Prefix = "mcp_" },
			want: []string{"bash", "mcp_call", "mcp_list"},
		},
		{
			name: "prefix that matches nothing folds nothing",
			cfg:  func(c *Config) { c.Prefix = "zz" },
			want: []string{"bash", "mcp__fs__list_directory", "mcp__fs__read_file", "mcp__fs__write_file", "mcp__github__create_issue", "mcp__github__get_file_contents", "mcp__github__search_issues", "mcp_call", "mcp_list"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memGate{raw: roundTrip(tt.gate.section())}
			if tt.gate.ServerIDs == nil {
				store.raw = nil
			}
			r := newRig(t, withConfig(tt.cfg), withStore(store))
			if diff := cmp.Diff(tt.want, r.names(testCaller)); diff != "" {
				t.Fatalf("assembled tools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeepPatterns(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"mcp__github__*", "mcp__github__create_issue", true},
		{"mcp__github__*", "mcp__githubx__create_issue", false},
		{"mcp__fs__read_file", "mcp__fs__read_file", true},
		{"mcp__fs__read_file", "mcp__fs__read_file2", false},
		{"mcp__fs__read", "mcp__fs__read_file", false}, // anchored
		{"*read*", "mcp__fs__read_file", true},
		{"mcp__a.b", "mcp__aXb", false}, // metacharacters are literal
		{"mcp__a.b", "mcp__a.b", true},
		{"mcp__(x)+", "mcp__(x)+", true},
		{"mcp__(x)+", "mcp__xx", false},
		{"mcp__[ab]", "mcp__a", false},
		{"*", "anything", true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"/"+tt.name, func(t *testing.T) {
			r, err := compile(Config{Prefix: "mcp__", Keep: []string{tt.pattern}, DescriptionLimit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.kept(tt.name); got != tt.want {
				t.Fatalf("kept(%q) with %q = %v, want %v", tt.name, tt.pattern, got, tt.want)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"empty prefix", func(c *Config) { c.Prefix = "" }, "prefix:"},
		{"prefix with a dot", func(c *Config) { c.Prefix = "mcp." }, "prefix:"},
		{"prefix too long", func(c *Config) { c.Prefix = strings.Repeat("a", 65) }, "prefix:"},
		{"prefix of 64", func(c *Config) { c.Prefix = strings.Repeat("a", 64) }, ""},
		{"zero limit", func(c *Config) { c.DescriptionLimit = 0 }, "descriptionLimit:"},
		{"limit of one", func(c *Config) { c.DescriptionLimit = 1 }, ""},
		{"empty keep", func(c *Config) { c.Keep = []string{"mcp__x", ""} }, "keep[1]:"},
		{"empty server", func(c *Config) { c.Servers = []string{""} }, "servers[0]:"},
		{"server with separator", func(c *Config) { c.Servers = []string{"a__b"} }, ""}, // a valid serverName
		{"server with a space", func(c *Config) { c.Servers = []string{"fs", "git hub"} }, "servers[1]:"},
		{"server with a dot", func(c *Config) { c.Servers = []string{"my.server"} }, "servers[0]:"},
		{"server with dash and underscore", func(c *Config) { c.Servers = []string{"my-server_2"} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Defaults()
			tt.cfg(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Validate error = %v, want it to start with %q", err, tt.wantErr)
			}
		})
	}
}

// direct runs the adapter's assemble handler over in, with a next that
// returns what it gets, so a test can check slice identity.
func direct(t *testing.T, a *adapter, in tools.Assembly) tools.Assembly {
	t.Helper()
	out, err := a.assemble(context.Background(), in, func(_ context.Context, v tools.Assembly) (tools.Assembly, error) { return v, nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func schemas(names ...string) []tools.Schema {
	out := make([]tools.Schema, len(names))
	for i, n := range names {
		out[i] = tools.Schema{Name: n, Description: "d", Parameters: json.RawMessage(`{}`)}
	}
	return out
}

func TestNothingToFoldReturnsTheSameSlice(t *testing.T) {
	r := newRig(t)
	in := tools.Assembly{Caller: testCaller, Tools: schemas("bash", "mcp_call", "mcp_list")}
	out := direct(t, r.a, in)
	if unsafe.SliceData(out.Tools) != unsafe.SliceData(in.Tools) || len(out.Tools) != len(in.Tools) {
		t.Fatal("an assembly with nothing to fold was copied")
	}
}

func TestFoldKeepsOtherFields(t *testing.T) {
	r := newRig(t)
	in := tools.Assembly{
		Caller:   tools.Caller{Kind: "model", ID: "s1", ImageInput: true},
		Sections: []tools.Section{{Name: "mcp github", Text: "Use issues wisely."}},
		Tools:    schemas("bash", "mcp__github__create_issue", "mcp_call", "mcp_list"),
	}
	out := direct(t, r.a, in)
	if diff := cmp.Diff(in.Caller, out.Caller); diff != "" {
		t.Fatalf("caller changed:\n%s", diff)
	}
	if diff := cmp.Diff(in.Sections, out.Sections); diff != "" {
		t.Fatalf("sections changed:\n%s", diff)
	}
	if len(in.Tools) != 4 {
		t.Fatal("the input slice was modified in place")
	}
	if got := len(out.Tools); got != 3 {
		t.Fatalf("got %d tools, want 3", got)
	}
}

func TestFailOpen(t *testing.T) {
	foreign := func(name string) tools.Definition {
		return tools.Definition{
			Name: name, Description: "someone else's",
			Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil },
		}
	}
	t.Run("foreign meta-tools", func(t *testing.T) {
		// The adapter's listener is installed but the meta-tools are not its
		// own: the assembly passes through untouched.
		reg := tools.New(nil)
		register(t, reg, nil, fleet...)
		for _, n := range []string{listName, callName} {
			if _, err := reg.Register(testScope(t, "other"), foreign(n)); err != nil {
				t.Fatal(err)
			}
		}
		a, err := newAdapter(reg, Defaults(), nil, "fold", nil)
		if err != nil {
			t.Fatal(err)
		}
		in := tools.Assembly{Tools: schemas("bash", "mcp__github__create_issue", "mcp_call", "mcp_list")}
		out := direct(t, a, in)
		if unsafe.SliceData(out.Tools) != unsafe.SliceData(in.Tools) || len(out.Tools) != 4 {
			t.Fatal("foreign meta-tools: the assembly was not passed through untouched")
		}
	})
	t.Run("meta-tools hidden from the caller", func(t *testing.T) {
		r := newRig(t)
		masked := tools.Caller{Kind: "model", Mask: &tools.Mask{Deny: []string{"mcp_call"}}}
		names := r.names(masked)
		if !containsName(names, "mcp__github__create_issue") {
			t.Fatalf("a caller that cannot see mcp_call lost the MCP schemas: %v", names)
		}
	})
	t.Run("meta-tools unregistered", func(t *testing.T) {
		r := newRig(t)
		r.a.live.Store(false)
		if names := r.names(testCaller); !containsName(names, "mcp__fs__read_file") {
			t.Fatalf("with the meta-tools gone the MCP schemas must pass through: %v", names)
		}
	})
}

func containsName(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

func TestRegistrationRollback(t *testing.T) {
	// mcp_call is taken, so mcp_list registers and must be rolled back.
	r := newRig(t, before(func(reg *tools.Registry, _ *commands.Registry) {
		_, err := reg.Register(testScope(t, "squatter"), tools.Definition{
			Name:    callName,
			Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
	}))
	if _, ok := r.reg.Get(listName); ok {
		t.Fatal("mcp_list stayed registered after mcp_call failed")
	}
	if !strings.Contains(r.logs.String(), "meta-tool registration failed") || !strings.Contains(r.logs.String(), "full-schema prompt passthrough") {
		t.Fatalf("no warning logged:\n%s", r.logs)
	}
	names := r.names(testCaller)
	if !containsName(names, "mcp__github__create_issue") {
		t.Fatalf("no listener may be installed after a failed registration, got %v", names)
	}
	if got := r.scope.Detail(); !strings.Contains(got, "fail-open") {
		t.Fatalf("detail = %q, want it to report fail-open", got)
	}
	// /mcp still answers, and says so.
	if got := r.run("").Text; !strings.Contains(got, "folding INACTIVE (fail-open)") {
		t.Fatalf("/mcp footer:\n%s", got)
	}
}

func TestDisposeRemovesEverything(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, nil, fleet...)
	cmds := commands.New()
	a, err := newAdapter(reg, Defaults(), &memGate{}, "fold", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := host.NewScope(context.Background(), "fold", nil)
	if err := a.start(s, cmds); err != nil {
		t.Fatal(err)
	}
	if err := s.Dispose(0); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get(listName); ok {
		t.Error("mcp_list outlived the scope")
	}
	if _, ok := reg.Get(callName); ok {
		t.Error("mcp_call outlived the scope")
	}
	if len(cmds.List()) != 0 {
		t.Error("/mcp outlived the scope")
	}
	asm, err := reg.Assemble(context.Background(), testCaller)
	if err != nil {
		t.Fatal(err)
	}
	if len(asm.Tools) != len(fleet) {
		t.Errorf("the fold outlived the scope: %d tools assembled, want %d", len(asm.Tools), len(fleet))
	}
	// A new instance can take the names again.
	s2 := host.NewScope(context.Background(), "fold", nil)
	defer s2.Dispose(0)
	if err := a.start(s2, cmds); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get(listName); !ok {
		t.Error("a restarted instance could not register mcp_list")
	}
}

// TestPromptCacheStability checks that the folded assembly is byte-identical
// before and after a re-sync that keeps the set of servers: tools that go
// and come back, change their descriptions and schemas, or grow in number
// all live behind the constant meta-tools.
func TestPromptCacheStability(t *testing.T) {
	reg := tools.New(nil)
	unregs := map[string]func(){}
	add := func(name, desc string) {
		un, err := reg.Register(testScope(t, "client"), tools.Definition{
			Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"v":{"type":"string","description":"` + desc + `"}}}`),
			Execute: func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{}, nil },
			Origin:  tools.Origin{Server: fixtureServer(name)},
		})
		if err != nil {
			t.Fatal(err)
		}
		unregs[name] = un
	}
	add("bash", "shell")
	for _, n := range []string{"mcp__github__a", "mcp__github__b", "mcp__fs__c"} {
		add(n, "first generation")
	}
	s := host.NewScope(context.Background(), "fold", nil)
	defer s.Dispose(0)
	a, err := newAdapter(reg, Defaults(), &memGate{}, "fold", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.start(s, nil); err != nil {
		t.Fatal(err)
	}
	snapshot := func() []byte {
		asm, err := reg.Assemble(context.Background(), testCaller)
		if err != nil {
			t.Fatal(err)
		}
		b, err := asm.ToolsJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := snapshot()

	// Re-sync: every MCP tool goes, then a new generation registers with
	// other descriptions, schemas and one more tool.
	for _, n := range []string{"mcp__github__a", "mcp__github__b", "mcp__fs__c"} {
		unregs[n]()
	}
	mid := snapshot()
	for _, n := range []string{"mcp__github__a", "mcp__github__b", "mcp__github__d", "mcp__fs__c"} {
		add(n, "second generation, longer text")
	}
	after := snapshot()
	if !bytes.Equal(before, after) {
		t.Fatalf("the folded prompt changed across a re-sync:\nbefore %s\nafter  %s", before, after)
	}
	if !bytes.Contains(mid, []byte(`"mcp_list"`)) {
		t.Fatalf("the meta-tools left the prompt mid re-sync: %s", mid)
	}
}
