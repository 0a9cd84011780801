package gateway

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// retryingComposition starts a gateway and the fixture server fx, whose
// every start crashes while the file crash exists, with startupTimeoutMs.
// It returns once the first update is applied (fx active, retrying).
func retryingComposition(t *testing.T, h *host.Host, crash string, startupMs int) (url string) {
	t.Helper()
	port := freePort(t)
	c, err := host.ParseComposition("composition.yml", []byte(fmt.Sprintf(`plugins:
  - {id: gateway, name: gateway, config: {http: "127.0.0.1:%d", listWait: 100ms}}
  - id: fx
    name: mcp-client
    config:
      serverName: fx
      transport: stdio
      command: %q
      args: [-crash-if-exists, %q]
      sandbox: {read: [%q]}
      startupTimeoutMs: %d
      reconnect: {initialDelayMs: 20, maxDelayMs: 100, maxAttempts: 100000}
`, port, mcptest.FixtureBinary(t), crash, filepath.Dir(crash), startupMs)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// TestReadyzWaitsForAnEagerServerRetryingItsFirstConnection: an eager
// server whose first connection failed (as one may under load) and that
// retries keeps /readyz at 503, naming it and why, until it connects: then
// ready means its tools are served. It once said ready at once, without
// them.
func TestReadyzWaitsForAnEagerServerRetryingItsFirstConnection(t *testing.T) {
	h := testHost(t)
	crash := filepath.Join(t.TempDir(), "crash")
	if err := os.WriteFile(crash, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	url := retryingComposition(t, h, crash, 60_000)
	code, body := readyz(t, url)
	if code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "entry fx") || !strings.Contains(body, "first connection failed") || !strings.Contains(body, "startupTimeoutMs (60000ms)") {
		t.Errorf("/readyz while fx retries its first connection: %d %q, want 503 naming fx, why and the bound", code, body)
	}
	// /readyz asks for no token: the server's own words (its stderr, the
	// crash file's path) stay in the status.
	if strings.Contains(body, "crash") || strings.Contains(body, "exit status") {
		t.Errorf("/readyz tells an unauthenticated caller the server's error: %q", body)
	}
	if err := os.Remove(crash); err != nil {
		t.Fatal(err)
	}
	mcptest.WaitFor(t, wait, "/readyz to say ready", func() bool {
		code, _ := readyz(t, url)
		return code == http.StatusOK
	})
	cs := connect(t, url)
	defer cs.Close()
	if names := toolNames(t, cs); !slices.Contains(names, "mcp__fx__greet") {
		t.Errorf("tools/list right after /readyz said ready = %q, want fx's tools", names)
	}
}

// TestReadyzWaitsForABrokenServerNoLongerThanItsStartupTimeout: a server
// that stays broken holds /readyz back for startupTimeoutMs from its start,
// not for ever: a replica must not stay out of its load balancer because
// of one server, whose status says why.
func TestReadyzWaitsForABrokenServerNoLongerThanItsStartupTimeout(t *testing.T) {
	h := testHost(t)
	crash := filepath.Join(t.TempDir(), "crash")
	if err := os.WriteFile(crash, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	url := retryingComposition(t, h, crash, 1500)
	mcptest.WaitFor(t, wait, "/readyz to say ready past fx's startupTimeoutMs", func() bool {
		code, _ := readyz(t, url)
		return code == http.StatusOK
	})
	if st := host.Find(h.Status(), "fx"); st.State != host.StateActive || !strings.Contains(st.Detail, "exit status 1") {
		t.Errorf("fx's status once /readyz gave up on it: %+v, want active with its failure", st)
	}
}
