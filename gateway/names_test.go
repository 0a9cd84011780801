package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/tools"
)

// mcpTool registers a tool as an MCP client does: under its public name,
// with the server and raw name as its origin.
func mcpOrigin(t *testing.T, reg *tools.Registry, server, raw string) {
	t.Helper()
	def := echo(tools.FitName("mcp__"+server+"__"+raw, tools.MaxNameLen, server+"\x00"+raw))
	def.Origin = tools.Origin{Server: server, RawName: raw}
	register(t, reg, def)
}

// TestServedNamesFitTheLimit: a client's prefix on a served name must keep
// it within the 64 characters model APIs accept, so the gateway serves
// names of at most its limit (48 by default): a longer one is cut and ends
// with a hash of the tool's identity, the same at every listing and
// distinct for tools whose names share their start; the call by the served
// name reaches the tool. dropMarker serves MCP tools without mcp__.
func TestServedNamesFitTheLimit(t *testing.T) {
	const server = "a-thirty-one-character-server-x" // 31 characters
	reg := tools.New(nil)
	mcpOrigin(t, reg, server, "create_pull_request_review_comment")
	mcpOrigin(t, reg, server, "create_pull_request_review_reply")
	mcpOrigin(t, reg, "gh", "search")
	register(t, reg, echo("mcp_list"))

	for _, tt := range []struct {
		name  string
		cfg   Config
		limit int
		short string // the served name of gh's search
	}{
		{"default", Config{}, DefaultNameLimit, "mcp__gh__search"},
		{"nameLimit 30, dropMarker", Config{NameLimit: 30, DropMarker: true}, 30, "gh__search"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(scope(t), reg, &tt.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs := connectClient(t, g)
			ctx := context.Background()
			list := func() map[string]bool {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				names := map[string]bool{}
				for _, tool := range res.Tools {
					names[tool.Name] = true
				}
				return names
			}
			first := list()
			if len(first) != 4 || !first[tt.short] || !first["mcp_list"] {
				t.Fatalf("served names = %v; want 4, with %s and mcp_list", first, tt.short)
			}
			for name := range first {
				if len(name) > tt.limit || !tools.ValidName(name) {
					t.Errorf("served name %q: %d characters, limit %d", name, len(name), tt.limit)
				}
				if tt.cfg.DropMarker && strings.HasPrefix(name, "mcp__") {
					t.Errorf("served name %q keeps the mcp__ marker", name)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hi"}})
				if err != nil || res.IsError {
					t.Errorf("call %s: %v %+v", name, err, res)
				}
			}
			// Another tool comes; the names served stay.
			register(t, reg, echo("later_"+strings.ReplaceAll(tt.name, " ", "_")[:3]))
			if err := g.syncNow(ctx); err != nil {
				t.Fatal(err)
			}
			again := list()
			for name := range first {
				if !again[name] {
					t.Errorf("%s is no longer served after another tool came: %v", name, again)
				}
			}
		})
	}
}

// TestServedNamesKeepTheToolsOwnName: behind a 31-character serverName at
// the default limit, every tool of server-everything is served under a name
// that ends with its own (the server part is what gets shortened), distinct,
// and a call by it reaches the tool.
func TestServedNamesKeepTheToolsOwnName(t *testing.T) {
	const server = "everything-server-for-team-test"
	raws := []string{
		"echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference", "get-roots-list",
		"get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource", "toggle-simulated-logging",
		"toggle-subscriber-updates", "trigger-elicitation-request", "trigger-elicitation-request-async",
		"trigger-long-running-operation", "trigger-sampling-request", "trigger-sampling-request-async", "trigger-url-elicitation",
	}
	reg := tools.New(nil)
	for _, raw := range raws {
		mcpOrigin(t, reg, server, raw)
	}
	g, err := New(scope(t), reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := connectClient(t, g)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, tool := range res.Tools {
		served[tool.Name] = true
	}
	for _, raw := range raws {
		var name string
		for s := range served {
			if strings.HasSuffix(s, "__"+raw) && len(s) <= DefaultNameLimit {
				name = s
			}
		}
		if name == "" {
			t.Errorf("%s: no served name ends with its own name: %v", raw, served)
			continue
		}
		delete(served, name)
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hi"}})
		if err != nil || r.IsError {
			t.Errorf("call %s: %v %+v", name, err, r)
		}
	}
}
