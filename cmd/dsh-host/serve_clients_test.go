package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// stdioSession connects a client to serve --stdio s, speaking MCP
// 2025-11-25 as the agent CLIs do (initialize, and notifications unasked).
func stdioSession(t *testing.T, ctx context.Context, s *served, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts).
		Connect(ctx, &mcp.IOTransport{Reader: s.stdout, Writer: s.stdin}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
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
	// The server may come after the first list (with a list_changed).
	listed := map[string]*mcp.Tool{}
	for listed["mcp_read_output"] == nil || listed["mcp_read"] == nil {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		clear(listed)
		for _, tool := range res.Tools {
			listed[tool.Name] = tool
		}
		time.Sleep(20 * time.Millisecond)
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

// TestServeStdioBrokenComposition: a composition that does not load still
// gets its client a session, which says what is wrong where clients show
// it (the instructions, an error log message, the error of a call), and
// the file is watched: the fix applies without restarting the client,
// which is told of the new tools.
func TestServeStdioBrokenComposition(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: hi, name: no-such-plugin}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serveInProcess(t, ctx, "--stdio", "-c", file)
	logged := make(chan string, 10)
	changed := make(chan struct{}, 10)
	cs := stdioSession(t, ctx, s, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params.Level == "error" {
				logged <- fmt.Sprint(req.Params.Data)
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	const says = "no-such-plugin"
	if got := cs.InitializeResult().Instructions; !strings.Contains(got, says) || !strings.Contains(got, file) {
		t.Errorf("instructions = %q; want the file and what is wrong with it", got)
	}
	select {
	case got := <-logged:
		if !strings.Contains(got, says) {
			t.Errorf("error log message = %q; want what is wrong", got)
		}
	case <-ctx.Done():
		t.Fatal("no error log message")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet"})
	if err == nil && !res.IsError {
		t.Fatalf("greet before the fix = %+v; want an error", res)
	}
	if why := fmt.Sprint(err, res); !strings.Contains(why, says) {
		t.Errorf("the failed call says %q; want what is wrong with the composition", why)
	}

	if err := os.WriteFile(file, []byte("plugins:\n  - {id: hi, name: greeter}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after the fix")
	}
	for {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "fixed"}})
		if err == nil && !res.IsError {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("greet after the fix: %v %+v", err, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cs.Close()
	cancel()
	s.exit(t)
}

// TestServeStdioLogsWarningsOnly: serve --stdio writes no info lines to
// stderr, which clients such as Claude Code show as errors; --log-level
// and DSH_LOG_LEVEL ask for more.
func TestServeStdioLogsWarningsOnly(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: hi, name: greeter}\n")
	for _, tt := range []struct {
		name, env string
		args      []string
		info      bool
	}{
		{"default", "", nil, false},
		{"DSH_LOG_LEVEL=info", "info", nil, true},
		{"--log-level info", "error", []string{"--log-level", "info"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DSH_LOG_LEVEL", tt.env)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := serveInProcess(t, ctx, append([]string{"--stdio", "-c", file}, tt.args...)...)
			cs := stdioSession(t, ctx, s, nil)
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			cs.Close()
			if code := s.exit(t); code != exitOK {
				t.Fatalf("exit %d\n%s", code, s.stderr)
			}
			if got := strings.Contains(s.stderr.String(), `"level":"INFO"`); got != tt.info {
				t.Errorf("info lines on stderr: %v, want %v\n%s", got, tt.info, s.stderr)
			}
		})
	}
}
