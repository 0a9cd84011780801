//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// gatewayProcess is a `dsh-host serve --http` process over the fixture
// server fx, whose slow and hold tools append their events to events; a
// hold call ends once release exists.
type gatewayProcess struct {
	cmd     *exec.Cmd
	logs    <-chan map[string]any
	base    string // http://ADDR, without /mcp
	url     string // the MCP endpoint
	events  string
	release string
}

// startGateway starts serve --http on a free port with extra args; the
// fixture gets fixtureArgs. It returns once the gateway listens (the
// composition may still be starting).
func startGateway(t *testing.T, ctx context.Context, fixtureArgs []string, args ...string) *gatewayProcess {
	t.Helper()
	dir := t.TempDir()
	events, release := filepath.Join(dir, "events"), filepath.Join(dir, "release")
	fixtureArgs = append([]string{"--cancel-file", events, "--hold-file", release}, fixtureArgs...)
	quoted := make([]string, len(fixtureArgs))
	for i, a := range fixtureArgs {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	file := writeComposition(t, fmt.Sprintf("plugins:\n  - {id: fx, name: mcp-client, config: {serverName: fx, transport: stdio, command: %q, args: [%s], %s}}\n",
		mcptest.FixtureBinary(t), strings.Join(quoted, ", "), mcptest.SandboxWrite(mcptest.FixtureWrites(fixtureArgs...)...)))
	cmd := command(t, ctx, append([]string{"serve", "--http", "127.0.0.1:0", "--log-format", "json", "-c", file}, args...)...)
	logs := startLogging(t, cmd)
	var url string
	waitLog(t, logs, "the listener", func(m map[string]any) bool {
		url, _ = m["url"].(string)
		return m["msg"] == "gateway listening"
	})
	return &gatewayProcess{cmd: cmd, logs: logs, base: strings.TrimSuffix(url, "/mcp"), url: url, events: events, release: release}
}

// get answers GET path on the gateway, without token or Origin checks'
// headers unless h sets them.
func (p *gatewayProcess) get(t *testing.T, path string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// waitReady polls /readyz until it answers 200 (a condition, bounded by a
// minute, not a timing).
func (p *gatewayProcess) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := p.get(t, "/readyz", nil)
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %q after a minute", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEvent waits for the fixture's slow tool to log event.
func (p *gatewayProcess) waitEvent(t *testing.T, event string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		data, _ := os.ReadFile(p.events)
		if strings.Contains(string(data), event) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fixture logged no %q within a minute: %q", event, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *gatewayProcess) connect(t *testing.T, ctx context.Context) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// slowCall starts the fixture's slow tool for ms and returns its outcome's
// channel, once the fixture has started it.
func (p *gatewayProcess) slowCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, ms int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__slow", Arguments: map[string]any{"ms": ms}})
		switch {
		case err != nil:
		case res.IsError:
			err = fmt.Errorf("tool error: %v", mcptest.Texts(res))
		case !strings.Contains(strings.Join(mcptest.Texts(res), ""), fmt.Sprintf("slept %d ms", ms)):
			err = fmt.Errorf("unexpected answer %v", mcptest.Texts(res))
		}
		done <- err
	}()
	p.waitEvent(t, "slow started")
	return done
}

// heldCall starts the fixture's hold tool and returns its outcome's
// channel, once the fixture has started it; the call ends at release.
func (p *gatewayProcess) heldCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__hold"})
		switch {
		case err != nil:
		case res.IsError:
			err = fmt.Errorf("tool error: %v", mcptest.Texts(res))
		case strings.Join(mcptest.Texts(res), "") != "released":
			err = fmt.Errorf("unexpected answer %v", mcptest.Texts(res))
		}
		done <- err
	}()
	p.waitEvent(t, "hold started")
	return done
}

// releaseHeld ends the fixture's hold calls.
func (p *gatewayProcess) releaseHeld(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(p.release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (p *gatewayProcess) signal(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// TestServeHealthEndpoints: /healthz answers 200 from the start; /readyz
// answers 503 while an eager server is still starting and 200 once it is
// ready; neither asks for the token nor minds a foreign Origin.
func TestServeHealthEndpoints(t *testing.T) {
	const token = "health-token-0123456789abcdef"
	t.Setenv("GW_BEARER", token)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	release := filepath.Join(t.TempDir(), "go")
	p := startGateway(t, ctx, []string{"--wait-file", release}, "--token-env", "GW_BEARER")
	foreign := http.Header{"Origin": {"http://evil.example"}}
	if code, body := p.get(t, "/healthz", foreign); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q, want 200 ok", code, body)
	}
	if code, body := p.get(t, "/readyz", foreign); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready") {
		t.Errorf("/readyz while fx starts: %d %q, want 503 not ready", code, body)
	}
	if code, _ := p.get(t, "/mcp", nil); code != http.StatusUnauthorized {
		t.Errorf("/mcp without the token: %d, want 401 (the token still guards MCP)", code)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.waitReady(t)
	if code, body := p.get(t, "/readyz", foreign); code != http.StatusOK || body != "ready" {
		t.Errorf("/readyz once ready: %d %q, want 200 ready", code, body)
	}
	p.signal(t)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v, want exit 0", err)
	}
}

// TestServeDrainsOnSIGTERM: a call in flight at SIGTERM completes; during
// the drain /readyz answers 503, and a new session and a new request on an
// open one are refused; the process then exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startGateway(t, ctx, nil)
	p.waitReady(t)
	cs := p.connect(t, ctx)
	defer cs.Close()
	// In flight until released, after the checks below: however slow
	// the machine, they run during the drain.
	held := p.heldCall(t, ctx, cs)
	p.signal(t)
	waitLog(t, p.logs, "the drain", msg("gateway: draining: no new session or request is taken; waiting for the requests in flight"))
	if code, body := p.get(t, "/readyz", nil); code != http.StatusServiceUnavailable || !strings.Contains(body, "draining") {
		t.Errorf("/readyz while draining: %d %q, want 503 draining", code, body)
	}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "late", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url, MaxRetries: -1}, nil); err == nil {
		t.Error("a new session opened during the drain")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ping"}); err == nil {
		t.Error("a new request on an open session ran during the drain")
	}
	select {
	case err := <-held:
		t.Fatalf("the held call ended before its release: %v", err)
	default:
	}
	p.releaseHeld(t)
	if err := <-held; err != nil {
		t.Errorf("the call in flight at SIGTERM: %v, want it completed", err)
	}
	waitLog(t, p.logs, "the drain's end", msg("drained: no request in flight"))
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after the drain: %v, want exit 0", err)
	}
}

// TestServeSecondSIGTERMEndsTheDrain: a second SIGTERM during the drain
// cuts the call in flight and serve exits, without waiting for the call
// or the drain timeout.
func TestServeSecondSIGTERMEndsTheDrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The drain timeout and the call outlast the test's own bound.
	p := startGateway(t, ctx, nil, "--drain-timeout", "10m")
	p.waitReady(t)
	cs := p.connect(t, ctx)
	defer cs.Close()
	slow := p.slowCall(t, ctx, cs, 600_000)
	p.signal(t)
	waitLog(t, p.logs, "the drain", msg("gateway: draining: no new session or request is taken; waiting for the requests in flight"))
	p.signal(t)
	waitLog(t, p.logs, "the cut", msg("second signal: ending the drain now; the requests in flight are cut"))
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after the second SIGTERM: %v, want exit 0", err)
	}
	if err := <-slow; err == nil {
		t.Error("the 10-minute call completed; want it cut")
	}
}

// TestServeDrainTimeout: past --drain-timeout the call in flight is cut and
// serve exits.
func TestServeDrainTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := startGateway(t, ctx, nil, "--drain-timeout", "100ms")
	p.waitReady(t)
	cs := p.connect(t, ctx)
	defer cs.Close()
	slow := p.slowCall(t, ctx, cs, 600_000)
	p.signal(t)
	waitLog(t, p.logs, "the timeout", msg("the drain ended with requests in flight; they are cut"))
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("serve after the drain timeout: %v, want exit 0", err)
	}
	if err := <-slow; err == nil {
		t.Error("the 10-minute call completed; want it cut")
	}
}
