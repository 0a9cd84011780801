package main

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/mcptest"
)

// stdioSession connects a client to serve --stdio s.
func stdioSession(t *testing.T, ctx context.Context, s *served, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts).
		Connect(ctx, &mcp.IOTransport{Reader: s.stdout, Writer: s.stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, s.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestServeMetaToolsReadOnly: the meta-tools that only read are listed
// with readOnlyHint, so that a client asking before a call that may change
// something (Codex under its default approval policy) calls them; mcp_call
// carries no annotations, since what it does is its target's.
func TestServeMetaToolsReadOnly(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	fixture := mcptest.FixtureBinary(t)
	file := writeComposition(t, "plugins:\n"+
		"  - {id: fx, name: mcp-client, config: {serverName: fx, transport: stdio, command: '"+fixture+"', args: [-resources, '2']}}\n"+
		"  - {id: fold, name: mcp-fold}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serveInProcess(t, ctx, "--stdio", "-c", file)
	cs := stdioSession(t, ctx, s, nil)
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		listed[tool.Name] = tool
	}
	for _, name := range []string{"mcp_list", "mcp_resources", "mcp_read", "mcp_read_output"} {
		tool := listed[name]
		if tool == nil {
			t.Errorf("%s is not listed", name)
			continue
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s annotations = %+v, want readOnlyHint", name, tool.Annotations)
		}
	}
	if call := listed["mcp_call"]; call == nil || call.Annotations != nil {
		t.Errorf("mcp_call = %+v, want it listed without annotations", call)
	}
	cs.Close()
	cancel()
	s.exit(t)
}
