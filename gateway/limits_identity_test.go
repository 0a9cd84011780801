package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/gateway/limits"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestIdentityRateLimit: an identity past its bucket gets 429 with
// Retry-After for a new session, and a tool error inside one; another
// identity is served meanwhile.
func TestIdentityRateLimit(t *testing.T) {
	// A bucket that does not refill within the test: no timing involved.
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true},
		auth: func(c *AuthConfig) { c.Limits = limits.Config{RequestsPerSecond: 0.001, Burst: 5} }})
	alice := f.as.Sign(f.as.Claims("alice", nil))
	cs := f.mustConnect(t, alice) // its discovery, initialize and initialized take three
	for i := range 2 {
		if text, isErr := authCall(t, cs, "whoami", nil); isErr {
			t.Fatalf("call %d: %s", i, text)
		}
	}
	text, isErr := authCall(t, cs, "whoami", nil)
	if !isErr || !strings.Contains(text, "requestsPerSecond") {
		t.Errorf("past the burst: %q (isError %v), want a tool error naming requestsPerSecond", text, isErr)
	}
	status, _, h := f.post(t, alice, "")
	if retry, _ := strconv.Atoi(h.Get("Retry-After")); status != http.StatusTooManyRequests || retry < 1 {
		t.Errorf("a new session past the burst: %d, Retry-After %q; want 429 with a delay", status, h.Get("Retry-After"))
	}
	bob := f.mustConnect(t, f.as.Sign(f.as.Claims("bob", nil)))
	if text, isErr := authCall(t, bob, "whoami", nil); isErr {
		t.Errorf("bob, while alice is limited: %s", text)
	}
}

// TestIdentityCallsInFlight: an identity with as many calls running as
// callsInFlight gets a tool error for one more, over all its sessions;
// another identity's calls run.
func TestIdentityCallsInFlight(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	block := tools.Definition{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ tools.Call) (tools.Output, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return tools.Output{Value: "done", Content: []tools.Content{tools.Text("done")}}, nil
		}}
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}, tools: []tools.Definition{block},
		auth: func(c *AuthConfig) { c.Limits = limits.Config{CallsInFlight: 1} }})
	alice := f.as.Sign(f.as.Claims("alice", nil))
	first, second := f.mustConnect(t, alice), f.mustConnect(t, alice)
	done := make(chan string, 1)
	go func() {
		res, err := first.CallTool(context.Background(), &mcp.CallToolParams{Name: "block"})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- resultText(res)
	}()
	<-started
	text, isErr := authCall(t, second, "whoami", nil)
	if !isErr || !strings.Contains(text, "callsInFlight") {
		t.Errorf("alice's second call in flight: %q (isError %v), want a tool error naming callsInFlight", text, isErr)
	}
	bob := f.mustConnect(t, f.as.Sign(f.as.Claims("bob", nil)))
	if text, isErr := authCall(t, bob, "whoami", nil); isErr {
		t.Errorf("bob, while alice is at her cap: %s", text)
	}
	close(release)
	if got := <-done; got != "done" {
		t.Errorf("alice's blocked call: %q", got)
	}
	if text, isErr := authCall(t, second, "whoami", nil); isErr {
		t.Errorf("alice once her call ended: %s", text)
	}
}

// TestIdentitySessionCap: an identity with as many sessions as its cap
// gets 429 for one more, until it ends one; another identity opens its own.
func TestIdentitySessionCap(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true},
		auth: func(c *AuthConfig) { c.Limits = limits.Config{Sessions: 1} }})
	alice := f.as.Sign(f.as.Claims("alice", nil))
	cs := f.mustConnect(t, alice)
	if status, _, h := f.post(t, alice, ""); status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("alice's second session: %d, Retry-After %q; want 429", status, h.Get("Retry-After"))
	}
	f.mustConnect(t, f.as.Sign(f.as.Claims("bob", nil)))
	cs.Close()
	waitFor(t, "alice's session to end", func() bool {
		status, _, h := f.post(t, alice, "")
		if status == http.StatusOK {
			f.deleteSession(t, alice, h.Get("Mcp-Session-Id"))
		}
		return status == http.StatusOK
	})
}

// deleteSession ends a session opened with post.
func (f *authFixture) deleteSession(t *testing.T, token, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, f.url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestIdentityRateCountsPingAndNotifications: requestsPerSecond counts
// every message of an identity: pings past its bucket are refused, and
// notifications (a cancel too, which is never dropped) use up its tokens,
// so that its next call is refused.
func TestIdentityRateCountsPingAndNotifications(t *testing.T) {
	const burst = 10
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true},
		auth: func(c *AuthConfig) { c.Limits = limits.Config{RequestsPerSecond: 0.001, Burst: burst} }})

	alice := f.mustConnect(t, f.as.Sign(f.as.Claims("alice", nil)))
	var err error
	for range 2 * burst {
		if err = alice.Ping(t.Context(), nil); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "requestsPerSecond") {
		t.Errorf("%d pings on a bucket of %d: last %v, want a refusal naming requestsPerSecond", 2*burst, burst, err)
	}

	bobToken := f.as.Sign(f.as.Claims("bob", nil))
	bob := f.mustConnect(t, bobToken)
	for i := range burst {
		body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.Itoa(1000+i) + `}}`
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bobToken)
		req.Header.Set("Mcp-Session-Id", bob.ID())
		req.Header.Set("Mcp-Protocol-Version", bob.InitializeResult().ProtocolVersion)
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notification %d: status %d, want 202", i, resp.StatusCode)
		}
	}
	if text, isErr := authCall(t, bob, "whoami", nil); !isErr || !strings.Contains(text, "requestsPerSecond") {
		t.Errorf("a call after %d notifications on a bucket of %d: %q (isError %v), want refused naming requestsPerSecond", burst, burst, text, isErr)
	}
}
