package gateway

import (
	"bufio"
	"net/http"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestForbiddenOriginConnectionClosed: a 403 for a foreign Origin closes
// its connection, like a 401; an allowed Origin keeps its keep-alive
// connection (the close is the refusal's, not every answer's).
func TestForbiddenOriginConnectionClosed(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{}, serveOptions{})

	c := l.dial(t)
	br := bufio.NewReader(c)
	resp, _ := roundTrip(t, c, br, rawInitialize(l.addr, "Origin: https://evil.example\r\n"))
	if resp.StatusCode != http.StatusForbidden || !resp.Close {
		t.Fatalf("foreign Origin: %d (Connection: close %v), want 403 and close", resp.StatusCode, resp.Close)
	}
	wantClosed(t, c, br)

	c = l.dial(t)
	br = bufio.NewReader(c)
	for i := range 2 {
		resp, body := roundTrip(t, c, br, rawInitialize(l.addr, "Origin: http://localhost:5173\r\n"))
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("loopback Origin, request %d on one connection: %d (Connection: close %v), want 200 kept open: %s", i+1, resp.StatusCode, resp.Close, body)
		}
	}
}
