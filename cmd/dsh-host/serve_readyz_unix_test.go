//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// listAll lists every tool, following the pages.
func listAll(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	var all []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tool)
	}
	return all
}

// countPrefix counts the tools whose name starts with prefix.
func countPrefix(tools []*mcp.Tool, prefix string) int {
	n := 0
	for _, tool := range tools {
		if strings.HasPrefix(tool.Name, prefix) {
			n++
		}
	}
	return n
}

// TestServeReadyzHoldsAServersTenThousandTools: /readyz says ready only
// once the gateway serves every tool of an eager server that lists 10,000:
// right after it, a call on each of the first 200 finds its tool, and
// tools/list holds them all.
func TestServeReadyzHoldsAServersTenThousandTools(t *testing.T) {
	const filler = 10_000
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := startGateway(t, ctx, []string{"-extra-tools", fmt.Sprint(filler)})
	go func() {
		for range p.logs { // read, so that the process never blocks on its stderr
		}
	}()
	p.waitReady(t)
	cs := p.connect(t, ctx)
	defer cs.Close()
	var unknown []string
	for i := range 200 {
		name := fmt.Sprintf("mcp__fx__filler_%03d", i+1)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}})
		if err != nil || res.IsError {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		t.Errorf("right after /readyz said ready, %d of 200 calls failed, the first on %s", len(unknown), unknown[0])
	}
	if n := countPrefix(listAll(t, ctx, cs), "mcp__fx__filler_"); n != filler {
		t.Errorf("right after /readyz said ready, tools/list holds %d of fx's %d filler tools", n, filler)
	}
	p.signal(t)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v, want exit 0", err)
	}
}

// TestServeReadyzHoldsEveryLazyCatalog: /readyz says ready only once
// tools/list holds the tools of every lazy entry: 200 started from their
// catalog cache, or 50 without one (a first run), which connect in the
// background to list them.
func TestServeReadyzHoldsEveryLazyCatalog(t *testing.T) {
	const perServer = 32 // the fixture's 12 tools and 20 fillers
	fixture := mcptest.FixtureBinary(t)
	// The catalog's key is the launch, not the server's name: one eager
	// run writes the catalog every lazy entry of the same launch reads.
	entry := func(i int, startup string) string {
		return fmt.Sprintf("  - {id: s%d, name: mcp-client, config: {serverName: s%d, transport: stdio, command: '%s', args: [-extra-tools, '20'], startup: %s}}\n", i, i, fixture, startup)
	}
	for _, tt := range []struct {
		name    string
		entries int
		cached  bool
	}{{"cached", 200, true}, {"no cache", 50, false}} {
		t.Run(tt.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			if tt.cached {
				warm := filepath.Join(dir, "warm.yml")
				if err := os.WriteFile(warm, []byte("plugins:\n"+entry(0, "eager")), 0o644); err != nil {
					t.Fatal(err)
				}
				tools := command(t, ctx, "tools", "-c", warm)
				tools.Env = append(tools.Env, "DSH_HOME="+home)
				if code, out, errs := runToEnd(t, tools); code != exitOK || !strings.Contains(out, "mcp__s0__filler_020") {
					t.Fatalf("warm run: exit %d\n%s\n%s", code, out, errs)
				}
			}
			var b strings.Builder
			b.WriteString("plugins:\n")
			for i := range tt.entries {
				b.WriteString(entry(i, "lazy"))
			}
			file := filepath.Join(dir, "composition.yml")
			if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := command(t, ctx, "serve", "--http", "127.0.0.1:0", "--log-format", "json", "-c", file)
			cmd.Env = append(cmd.Env, "DSH_HOME="+home)
			logs := startLogging(t, cmd)
			var url string
			waitLog(t, logs, "the listener", func(m map[string]any) bool {
				url, _ = m["url"].(string)
				return m["msg"] == "gateway listening"
			})
			go func() {
				for range logs { // read, so that the process never blocks on its stderr
				}
			}()
			p := &gatewayProcess{cmd: cmd, base: strings.TrimSuffix(url, "/mcp"), url: url}
			p.waitReady(t)
			cs := p.connect(t, ctx)
			defer cs.Close()
			if n := countPrefix(listAll(t, ctx, cs), "mcp__s"); n != tt.entries*perServer {
				t.Errorf("right after /readyz said ready, tools/list holds %d of the %d tools of %d lazy entries", n, tt.entries*perServer, tt.entries)
			}
			p.signal(t)
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("serve after SIGTERM: %v, want exit 0", err)
			}
		})
	}
}
