package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// lastStart is the last line of the fixture's -starts-file ("start PID").
func lastStart(t *testing.T, starts string) string {
	t.Helper()
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// TestRestart: Restart runs an entry's server anew (another process,
// the entry active again, its transport told over both implementations);
// an unknown id and a disabled entry are errors naming the id.
func TestRestart(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	args := []string{"-starts-file", starts}
	composition := fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q, args: [%q, %q], %s}
  - id: off
    name: mcp-client
    disabled: true
    config: {serverName: off, transport: stdio, command: %[1]q}
`, mcptest.FixtureBinary(t), args[0], args[1], mcptest.SandboxWrite(mcptest.FixtureWrites(args...)...))
	both(t, composition, func(t *testing.T, e *env) {
		st, err := e.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if fx := host.Find(st.Instances, "fx"); fx.State != host.StateActive || fx.Transport != "stdio" {
			t.Fatalf("fx before: %+v; want active over stdio", fx)
		}
		before := lastStart(t, starts)
		res, err := e.Restart(t.Context(), "fx")
		if err != nil || len(res.Outcomes) != 1 || res.Outcomes[0].ID != "fx" || res.Outcomes[0].Result != "restarted" {
			t.Fatalf("Restart: %+v, %v; want fx restarted", res, err)
		}
		if after := lastStart(t, starts); after == before {
			t.Errorf("the server's process is still %q after Restart", after)
		}
		if fx := host.Find(res.Instances, "fx"); fx.State != host.StateActive {
			t.Errorf("fx after: %+v; want active", fx)
		}
		for id, want := range map[string]string{"nope": `"nope"`, "off": `"off": the entry is disabled`} {
			if _, err := e.Restart(t.Context(), id); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Restart(%q): %v; want an error naming it", id, err)
			}
		}
	})
}
