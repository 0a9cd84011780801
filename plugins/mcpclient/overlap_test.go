package mcpclient_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestE2EOverlapStuckNewServerIsBoundedByStartupTimeout: an edit whose new
// server never answers is given up after its startupTimeoutMs, not the
// host's much longer ready timeout; the old server keeps answering, and
// the hung process is stopped.
func TestE2EOverlapStuckNewServerIsBoundedByStartupTimeout(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", nil, "-counter"))
	hs.requireActive("fx")
	if got := text(hs.call(tools.Caller{}, "mcp__fx__count", nil)); got != "1" {
		t.Fatalf("count %q, want 1", got)
	}
	hs.apply(stdioFixture(t, "fx", "fx", map[string]any{"startupTimeoutMs": 300}, "-counter", "-hang"))
	st := hs.status("fx")
	if st.State != "active" || !strings.HasPrefix(st.Kept, "kept the previous config: the new one failed: ") || !strings.Contains(st.Kept, "startupTimeoutMs (300ms)") {
		t.Fatalf("status %+v, want active, kept because of the startup timeout", st)
	}
	if got := text(hs.call(tools.Caller{}, "mcp__fx__count", nil)); got != "2" {
		t.Errorf("count %q after the stuck edit, want 2 (the same server)", got)
	}
}

// TestE2EOverlapSwapsResourcesAndPrompts: after an edit, the server's
// resources and prompt commands are the new instance's, listed once; a
// read reaches the new server.
func TestE2EOverlapSwapsResourcesAndPrompts(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", map[string]any{"env": map[string]any{"GEN": "1"}}, "-resources", "2", "-prompts"))
	hs.requireActive("fx")
	before := hs.registry().List(tools.Caller{})
	hs.apply(stdioFixture(t, "fx", "fx", map[string]any{"env": map[string]any{"GEN": "2"}}, "-resources", "2", "-prompts"))
	hs.requireActive("fx")
	if st := hs.status("fx"); st.Kept != "" {
		t.Fatalf("kept after a good edit: %s", st.Kept)
	}
	reg := hs.resources()
	if servers := reg.Servers(); !slices.Equal(servers, []string{"fx"}) {
		t.Errorf("resource servers %q, want fx once", servers)
	}
	if got := resourceURIs(reg.List(resources.Filter{Server: "fx"})); !slices.Contains(got, "fixture://doc/001") {
		t.Errorf("resources after the swap: %q", got)
	}
	if _, err := reg.Read(t.Context(), "fixture://doc/001", nil); err != nil {
		t.Errorf("read after the swap: %v", err)
	}
	var cmds []string
	for _, c := range hs.commands().List() {
		cmds = append(cmds, c.Name)
	}
	if !slices.Contains(cmds, "mcp__fx__echo") {
		t.Errorf("prompt commands after the swap: %q", cmds)
	}
	after := hs.registry().List(tools.Caller{})
	if len(after) != len(before) {
		t.Errorf("%d tools after the swap, %d before", len(after), len(before))
	}
	if got := text(hs.call(tools.Caller{}, "mcp__fx__env", nil)); !strings.Contains(got, "GEN=2") {
		t.Errorf("env after the swap lacks GEN=2: %q", got)
	}
}

// TestE2EOverlapToALazyServerIsReadyFromTheCache: an eager server edited to
// start lazy is ready at once from its catalog cache: the swap keeps the
// tools, and the old process stops without a new one starting.
func TestE2EOverlapToALazyServerIsReadyFromTheCache(t *testing.T) {
	hs := newHarness(t)
	fixture := mcptest.FixtureBinary(t)
	starts := filepath.Join(t.TempDir(), "starts")
	eager := stdioFixture(t, "lz", "lz", nil, "-starts-file", starts)
	hs.apply(eager) // its discovery writes the catalog cache
	hs.requireActive("lz")
	before := hs.serverTools("lz")
	hs.apply(withConfig(eager, map[string]any{"startup": "lazy"}))
	if st := hs.status("lz"); st.State != "active" || st.Kept != "" {
		t.Fatalf("status %+v, want active, nothing kept", st)
	}
	if got := hs.serverTools("lz"); !slices.Equal(got, before) {
		t.Errorf("tools after the swap %q, want %q", got, before)
	}
	eventually(t, "the old server to stop", func() bool { return len(mcptest.ChildProcesses(t, fixture)) == 0 })
	if n := countLinesIn(t, starts); n != 1 {
		t.Errorf("%d starts, want 1: the lazy instance starts nothing before a call", n)
	}
}
