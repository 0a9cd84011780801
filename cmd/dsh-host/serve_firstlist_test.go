package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// coldStart is a composition of ten eager fixture servers s0..s9 on a
// fresh DSH_HOME (no catalog cache): s0 also offers resources and
// prompts, s8 is slower to start than serve waited before its session
// (gateway.StartupWait's 300 ms) and s9 answers nothing until release
// exists, past any bound.
type coldStart struct {
	file, home, release string
}

func newColdStart(t testing.TB, fixture string) coldStart {
	dir := t.TempDir()
	// release is in a directory of its own, which s9's sandbox may read.
	c := coldStart{home: filepath.Join(dir, "home"), release: filepath.Join(t.TempDir(), "release")}
	var b strings.Builder
	b.WriteString("plugins:\n")
	for i := range 10 {
		args := ""
		switch i {
		case 0:
			args = ", args: [-resources, '2', -prompts]"
		case 8:
			args = ", args: [-start-delay, 1s]"
		case 9:
			args = fmt.Sprintf(", args: [-wait-file, '%s'], sandbox: {read: ['%s']}", c.release, filepath.Dir(c.release))
		}
		fmt.Fprintf(&b, "  - {id: s%d, name: mcp-client, config: {serverName: s%d, transport: stdio, command: '%s'%s}}\n", i, i, fixture, args)
	}
	c.file = filepath.Join(dir, "composition.yml")
	if err := os.WriteFile(c.file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// servers returns the fixture servers, sN, whose tools the list holds.
func servers(tools []*mcp.Tool) []string {
	var out []string
	for _, tool := range tools {
		rest, ok := strings.CutPrefix(tool.Name, "mcp__")
		if !ok {
			continue
		}
		server, _, _ := strings.Cut(rest, "__")
		if !slices.Contains(out, server) {
			out = append(out, server)
		}
	}
	slices.Sort(out)
	return out
}

func toolNamed(tools []*mcp.Tool, name string) bool {
	return slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == name })
}

// TestServeStdioFirstListsWaitForEagerServers: on a cold start (no catalog
// cache) the first tools/list of serve --stdio holds every eager server
// that connects within the list wait, the slow one included, and the
// meta-tools mcp_resources and mcp_read; the first resources/list and
// prompts/list hold s0's. The server slower than the bound comes later,
// announced by list_changed. initialize is not held by the wait
// (TestMeasureInitialize measures its latency).
func TestServeStdioFirstListsWaitForEagerServers(t *testing.T) {
	c := newColdStart(t, mcptest.FixtureBinary(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// s9 is past any bound; the others must be within it however loaded
	// the machine, so the bound is wider than the default 5 s, at the
	// cost of this test's waiting it out.
	cmd := command(t, ctx, "serve", "--stdio", "--log-level", "error", "--list-wait", "15s", "-c", c.file)
	cmd.Env = append(cmd.Env, "DSH_HOME="+c.home)
	changed := make(chan struct{}, 100)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	first, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"}
	if got := servers(first.Tools); !slices.Equal(got, want) {
		t.Errorf("the first tools/list holds the tools of %v, want %v (all but s9, slower than the bound)", got, want)
	}
	for _, meta := range []string{"mcp_resources", "mcp_read"} {
		if !toolNamed(first.Tools, meta) {
			t.Errorf("the first tools/list lacks %s", meta)
		}
	}
	if res, err := cs.ListResources(ctx, nil); err != nil || len(res.Resources) == 0 {
		t.Errorf("the first resources/list: %v, %v; want s0's resources", res, err)
	}
	if res, err := cs.ListPrompts(ctx, nil); err != nil || len(res.Prompts) == 0 {
		t.Errorf("the first prompts/list: %v, %v; want s0's prompts", res, err)
	}

	// s9 comes once it answers, with a list_changed.
	if err := os.WriteFile(c.release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("no tools/list_changed brought s9's tools")
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(servers(res.Tools), "s9") {
			break
		}
	}
}
