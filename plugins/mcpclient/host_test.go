package mcpclient

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// childEntry is a composition entry running the test binary as a stdio MCP
// server.
func childEntry(id, server string, extra map[string]any) host.Entry {
	cfg := map[string]any{
		"serverName": server,
		"transport":  "stdio",
		"command":    os.Args[0],
		"args":       []any{"-test.run=^$"},
		"env":        map[string]any{childModeEnv: "normal"},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return host.Entry{ID: id, Name: PluginName, Config: cfg, File: "test.yml", Line: 1}
}

// newHost runs a host on the built-in services plus entries.
func newHost(t *testing.T, entries ...host.Entry) *host.Host {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	logs := &logRecorder{}
	h := host.New(&host.Options{Logger: slog.New(logs)})
	t.Cleanup(func() {
		if err := h.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.dump())
		}
	})
	c := &host.Composition{File: "test.yml", Entries: append([]host.Entry{{
		ID: "attachments", Name: "attachments", Config: map[string]any{"dir": filepath.Join(t.TempDir(), "att")},
	}}, entries...)}
	if err := h.Apply(t.Context(), c); err != nil {
		t.Fatalf("apply: %v", err)
	}
	return h
}

func status(t *testing.T, h *host.Host, id string) host.InstanceStatus {
	t.Helper()
	for _, s := range h.Status() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no instance %q in %+v", id, h.Status())
	return host.InstanceStatus{}
}

func TestHostRunsTheServer(t *testing.T) {
	h := newHost(t, childEntry("kid", "kid", map[string]any{"reconnect": map[string]any{"maxAttempts": 2}}))
	st := status(t, h, "kid")
	if st.State != host.StateActive || st.Detail != "connected, 1 tools" {
		t.Fatalf("status = %+v", st)
	}
	reg, _ := host.Service(h, tools.Key)
	res := reg.Execute(t.Context(), tools.Caller{}, "mcp__kid__pids", nil)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	a, err := reg.Assemble(t.Context(), tools.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range a.Sections {
		found = found || s.Name == "mcp:kid" && s.Text == "### MCP server: kid\n\nChild instructions."
	}
	if !found {
		t.Errorf("no instructions section in %+v", a.Sections)
	}
}

func TestHostRejectsBadConfigNamingTheKey(t *testing.T) {
	for _, tt := range []struct {
		extra map[string]any
		want  string
	}{
		{map[string]any{"reconnect": map[string]any{"initialDelayMs": 0}},
			"reconnect.initialDelayMs must be a positive number no greater than 2147483647"},
		{map[string]any{"reconnect": map[string]any{"initialDelayMs": 5000, "maxDelayMs": 100}},
			"reconnect.initialDelayMs must be less than or equal to maxDelayMs"},
		{map[string]any{"url": "http://127.0.0.1:1/mcp"}, "url is not an option of the stdio transport"},
		{map[string]any{"serverName": "bad name!"}, `serverName "bad name!" must match`},
	} {
		c := &host.Composition{File: "test.yml", Entries: []host.Entry{childEntry("bad", "bad", tt.extra)}}
		err := host.Check(c)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bad") {
			t.Errorf("Check(%v) = %v, want %q", tt.extra, err, tt.want)
		}
	}
}

func TestHostFailOnStartupError(t *testing.T) {
	h := newHost(t, host.Entry{ID: "gone", Name: PluginName, Config: map[string]any{
		"serverName": "gone", "transport": "stdio", "command": "/nonexistent/server", "failOnStartupError": true,
	}})
	st := status(t, h, "gone")
	if st.State != host.StateFailed || !strings.Contains(st.Err, "mcp-client(gone): initial connection or tool synchronization failed") {
		t.Errorf("status = %+v", st)
	}
}
