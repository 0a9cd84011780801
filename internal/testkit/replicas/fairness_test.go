package replicas

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// initializeFrom opens a session at url from the loopback address src
// (every 127/8 address is the machine's own on Linux), and returns the
// status and body of the answer.
func initializeFrom(t *testing.T, ctx context.Context, src, url string) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	defer hc.CloseIdleConnections()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fair","version":"0"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestSessionsPerCallerBehindHAProxy: behind the project's HAProxy config,
// where every client reaches the gateway from HAProxy's one address, the
// sessions are still counted per client: HAProxy says whose each request
// is (option forwardfor), and a gateway that trusts it (trustedProxies)
// refuses a client past its maxSessionsPerCaller (429, naming the client
// and the key) while another client still opens sessions. Without
// trustedProxies every client is HAProxy's address and shares one share.
func TestSessionsPerCallerBehindHAProxy(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		o := options(t, 1)
		o.Stateful = true
		o.Gateway = "maxSessionsPerCaller: 2"
		if trusted {
			o.Gateway += `, trustedProxies: ["127.0.0.1"]`
		}
		func() {
			defer logs(t, o.Dir)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := Start(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := c.Close(); err != nil {
					t.Error(err)
				}
			}()
			for i := range 2 {
				if status, body := initializeFrom(t, ctx, "127.0.0.2", c.URL); status != http.StatusOK {
					t.Fatalf("trusted=%v: session %d of 127.0.0.2: %d %q", trusted, i+1, status, body)
				}
			}
			status, body := initializeFrom(t, ctx, "127.0.0.2", c.URL)
			if status != http.StatusTooManyRequests || !strings.Contains(body, "maxSessionsPerCaller") {
				t.Errorf("trusted=%v: a third session of 127.0.0.2: %d %q, want 429 naming maxSessionsPerCaller", trusted, status, body)
			}
			if trusted && !strings.Contains(body, "127.0.0.2") {
				t.Errorf("the refusal %q does not name the client 127.0.0.2", body)
			}
			status, body = initializeFrom(t, ctx, "127.0.0.3", c.URL)
			switch {
			case trusted && status != http.StatusOK:
				t.Errorf("another client's session behind HAProxy: %d %q, want it opened", status, body)
			case !trusted && status != http.StatusTooManyRequests:
				t.Errorf("without trustedProxies, another client's session: %d %q, want 429 (every client is HAProxy's address)", status, body)
			}
		}()
	}
}
