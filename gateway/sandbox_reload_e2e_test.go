package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestE2ESandboxEditRestartsOnlyThatServer: an edit of one entry's
// sandbox key alone (mode off to the default, auto), picked up by the
// gateway's file watcher, starts that server again inside the sandbox
// (its answers then show the sandbox's TMPDIR) while calls to it go on
// without one failing: the old process serves until the new one is ready.
// The other server is not restarted.
func TestE2ESandboxEditRestartsOnlyThatServer(t *testing.T) {
	if abi, why := sandbox.Support(); abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock is required under CI=true: %s", why)
		}
		t.Skip(why)
	}
	bin := dshHostBinary(t)
	e := newE2E(t)
	fxStarts, otherStarts := filepath.Join(e.events, "fx.starts"), filepath.Join(e.events, "other.starts")
	write := func(fxSandbox string) {
		yaml := fmt.Sprintf(`plugins:
  - id: fixture
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %[1]q
      args: [-cancel-file, %[2]q, -starts-file, %[3]q]
      sandbox: %[5]s
  - id: other
    name: mcp-client
    config:
      serverName: other
      transport: stdio
      command: %[1]q
      args: [-starts-file, %[4]q]
      sandbox: {write: [%[6]q]}
`, e.fixture, e.cancelFile, fxStarts, otherStarts, fxSandbox, e.events)
		tmp := e.composition + ".tmp"
		if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, e.composition); err != nil {
			t.Fatal(err)
		}
	}
	write(`{mode: "off"}`)
	cs, _ := goClient(t, &mcp.StreamableClientTransport{Endpoint: e.serveHTTPProc(t, bin, nil).url})
	sandboxed := "TMPDIR=" + filepath.Join(os.TempDir(), "dsh-sandbox-")
	call := func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__env"})
		if err != nil {
			return "", err
		}
		text := strings.Join(mcptest.Texts(res), "")
		if res.IsError {
			return "", fmt.Errorf("tool error: %s", text)
		}
		return text, nil
	}
	if text, err := call(); err != nil || strings.Contains(text, sandboxed) {
		t.Fatalf("before the edit: %v, sandboxed %v", err, strings.Contains(text, sandboxed))
	}

	write(fmt.Sprintf("{write: [%q]}", e.events))
	calls, failed := 0, 0
	var firstFailure error
	deadline := time.Now().Add(time.Minute)
	for {
		text, err := call()
		calls++
		if err != nil {
			failed++
			if firstFailure == nil {
				firstFailure = err
			}
		}
		if strings.Contains(text, sandboxed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer from a sandboxed fx within a minute (%d calls, %d failed: %v)", calls, failed, firstFailure)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d calls across the edit", calls)
	if failed > 0 {
		t.Errorf("%d of %d calls failed across the edit (first: %v)", failed, calls, firstFailure)
	}
	mcptest.WaitFor(t, time.Minute, "the old fx to stop", func() bool { return len(mcptest.ProcessesWith(t, fxStarts)) == 1 })
	if n := lines(t, fxStarts); n != 2 {
		t.Errorf("fx started %d times, want 2", n)
	}
	if n := lines(t, otherStarts); n != 1 {
		t.Errorf("the other server started %d times, want once: an edit of fx's sandbox restarted it", n)
	}
}

func lines(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
