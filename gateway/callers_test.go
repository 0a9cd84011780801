package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// from is an HTTP client whose connections come from the loopback
// address src (127.0.0.2 and so on: every 127/8 address is the machine's
// own on Linux), with xff as its X-Forwarded-For when not empty.
type from struct {
	src string
	hc  *http.Client
}

func newFrom(t *testing.T, src string) *from {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: wait}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	t.Cleanup(hc.CloseIdleConnections)
	return &from{src: src, hc: hc}
}

// initialize opens a session as f's client, claiming xff, and returns the
// status, session id and body.
func (f *from) initialize(t *testing.T, url, xff string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := f.hc.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(body)
}

// dialFrom opens a raw connection to addr from src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: wait}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(wait))
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends GET path on c and returns the status and body.
func get(t *testing.T, c net.Conn, addr, path string) (int, string) {
	t.Helper()
	resp, body := roundTrip(t, c, bufio.NewReader(c), "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	return resp.StatusCode, body
}

// TestHealthOutsideTheConnectionCap: with every connection place held by
// idle clients, /healthz and /readyz are still answered (200), while an
// MCP request is refused 503 naming maxConnections: a liveness probe must
// not restart a healthy gateway.
func TestHealthOutsideTheConnectionCap(t *testing.T) {
	const max = 3
	l := serveLimited(t, tools.New(nil), Config{Limits: Limits{MaxConnections: max, MaxConnectionsPerCaller: max}}, serveOptions{})
	for range max {
		c := l.dial(t)
		if status, _ := get(t, c, l.addr, "/healthz"); status != http.StatusOK {
			t.Fatalf("an idle client's /healthz: %d", status)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		status, body := get(t, l.dial(t), l.addr, path)
		if status != http.StatusOK {
			t.Errorf("%s with every place held: %d %q, want 200", path, status, body)
		}
	}
	c := l.dial(t)
	resp, body := roundTrip(t, c, bufio.NewReader(c), rawInitialize(l.addr, ""))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "maxConnections") {
		t.Errorf("an initialize with every place held: %d %q, want 503 naming maxConnections", resp.StatusCode, body)
	}
}

// TestConnectionsPerCaller: one client address holds at most
// maxConnectionsPerCaller connections, and is told so (429); another
// address still connects; a trusted proxy's connections are not capped
// so, since it carries many callers.
func TestConnectionsPerCaller(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		var proxies []string
		if trusted {
			proxies = []string{"127.0.0.2"}
		}
		l := serveLimited(t, tools.New(nil), Config{Limits: Limits{MaxConnections: 20, MaxConnectionsPerCaller: 2, TrustedProxies: proxies}}, serveOptions{})
		for range 2 {
			if status, _ := get(t, dialFrom(t, "127.0.0.2", l.addr), l.addr, "/healthz"); status != http.StatusOK {
				t.Fatalf("trusted=%v: a connection within the share: %d", trusted, status)
			}
		}
		c := dialFrom(t, "127.0.0.2", l.addr)
		resp, body := roundTrip(t, c, bufio.NewReader(c), rawInitialize(l.addr, ""))
		switch {
		case !trusted && (resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "maxConnectionsPerCaller") || !strings.Contains(body, "127.0.0.2")):
			t.Errorf("a third connection from 127.0.0.2: %d %q, want 429 naming the address and maxConnectionsPerCaller", resp.StatusCode, body)
		case trusted && resp.StatusCode != http.StatusOK:
			t.Errorf("a trusted proxy's third connection: %d %q, want it served", resp.StatusCode, body)
		}
		if status, body := get(t, dialFrom(t, "127.0.0.3", l.addr), l.addr, "/readyz"); status != http.StatusOK {
			t.Errorf("trusted=%v: another address: %d %q", trusted, status, body)
		}
	}
}

// TestSessionsPerCaller: one caller opens at most maxSessionsPerCaller
// sessions and is told so (429), however long they would idle; another
// caller still opens one; a session ended (DELETE) gives its place back.
// Behind a trusted proxy the caller is X-Forwarded-For's address; from
// anyone else X-Forwarded-For is ignored.
func TestSessionsPerCaller(t *testing.T) {
	l := serveLimited(t, tools.New(nil), Config{Limits: Limits{MaxSessionsPerCaller: 2, TrustedProxies: []string{"127.0.0.9/32"}}}, serveOptions{})
	a, b, proxy := newFrom(t, "127.0.0.2"), newFrom(t, "127.0.0.3"), newFrom(t, "127.0.0.9")
	var ids []string
	for i := range 3 {
		// A client's X-Forwarded-For is its own claim: ignored.
		status, id, body := a.initialize(t, l.url, "10.9.9."+string(rune('1'+i)))
		if i < 2 {
			if status != http.StatusOK {
				t.Fatalf("session %d of 127.0.0.2: %d %q", i+1, status, body)
			}
			ids = append(ids, id)
			continue
		}
		if status != http.StatusTooManyRequests || !strings.Contains(body, "maxSessionsPerCaller") || !strings.Contains(body, "127.0.0.2") {
			t.Errorf("a third session of 127.0.0.2: %d %q, want 429 naming it and maxSessionsPerCaller", status, body)
		}
	}
	if status, _, body := b.initialize(t, l.url, ""); status != http.StatusOK {
		t.Errorf("127.0.0.3's session: %d %q, want it opened", status, body)
	}
	// Through the proxy: each forwarded address is a caller of its own.
	for _, xff := range []string{"10.0.0.1", "10.0.0.1", "10.0.0.2", "203.0.113.7, 10.0.0.2"} {
		if status, _, body := proxy.initialize(t, l.url, xff); status != http.StatusOK {
			t.Errorf("through the proxy for %s: %d %q", xff, status, body)
		}
	}
	if status, _, body := proxy.initialize(t, l.url, "10.0.0.1"); status != http.StatusTooManyRequests || !strings.Contains(body, "10.0.0.1") {
		t.Errorf("a third session for 10.0.0.1 through the proxy: %d %q, want 429 naming 10.0.0.1", status, body)
	}
	// One of 127.0.0.2's sessions ended: it opens another.
	req, _ := http.NewRequest(http.MethodDelete, l.url, nil)
	req.Header.Set("Mcp-Session-Id", ids[0])
	resp, err := a.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if status, _, body := a.initialize(t, l.url, ""); status != http.StatusOK {
		t.Errorf("127.0.0.2 after ending a session: %d %q, want it opened", status, body)
	}
}

// TestClientAddr: X-Forwarded-For is read from the right, past trusted
// proxies only; an entry that does not parse stops the walk at the last
// trusted hop.
func TestClientAddr(t *testing.T) {
	p, err := parseProxies([]string{"10.0.0.0/8", "::1", "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"198.51.100.1:5000", []string{"1.2.3.4"}, "198.51.100.1"},         // not a proxy: the claim is ignored
		{"10.1.2.3:5000", nil, "10.1.2.3"},                                 // a proxy without the header
		{"10.1.2.3:5000", []string{"1.2.3.4, 203.0.113.5"}, "203.0.113.5"}, // the proxy's own entry wins over the client's claim
		{"10.1.2.3:5000", []string{"203.0.113.5", "10.9.9.9"}, "203.0.113.5"},
		{"[::1]:5000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"192.0.2.1:80", []string{"garbage, 10.3.3.3"}, "10.3.3.3"},
		{"[::ffff:10.1.1.1]:80", []string{"198.51.100.9"}, "198.51.100.9"},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := p.clientAddr(r); got != netip.MustParseAddr(c.want) {
			t.Errorf("%s with %q: %v, want %s", c.remote, c.xff, got, c.want)
		}
	}
}

// TestTrustedProxiesValidate: an entry that is neither an IP nor a CIDR,
// or that trusts every address, is refused, naming the key, the entry and
// its place.
func TestTrustedProxiesValidate(t *testing.T) {
	l := Limits{TrustedProxies: []string{"10.0.0.0/8", "10.0.0.0/33"}}
	err := l.Validate()
	if err == nil || !strings.Contains(err.Error(), `trustedProxies[1] "10.0.0.0/33"`) {
		t.Errorf("Validate: %v, want an error naming trustedProxies[1]", err)
	}
	for _, all := range []string{"0.0.0.0/0", "::/0"} {
		l := Limits{TrustedProxies: []string{"127.0.0.1", all}}
		if err := l.Validate(); err == nil || !strings.Contains(err.Error(), `trustedProxies[1] "`+all+`": trusts every address`) {
			t.Errorf("%s: %v, want refused naming trustedProxies[1]", all, err)
		}
	}
	for _, bad := range []Limits{{MaxConnectionsPerCaller: -1}, {MaxSessionsPerCaller: -1}} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "PerCaller") {
			t.Errorf("%+v: %v, want refused", bad, err)
		}
	}
}

// TestSessionsPerCallerByIdentity: when the gateway authenticates, a
// caller is its token's identity, not its address: two identities from
// one address each open their share (maxSessionsPerCaller), and one past
// it is told so, naming the key, while the other still opens.
func TestSessionsPerCallerByIdentity(t *testing.T) {
	f := newAuthFixture(t, authSetup{issuer: oauthtest.Options{JWT: true}, limits: Limits{MaxSessionsPerCaller: 2}})
	alice, bob := f.as.Sign(f.as.Claims("alice", nil)), f.as.Sign(f.as.Claims("bob", nil))
	for range 2 {
		if status, _, _ := f.post(t, alice, ""); status != http.StatusOK {
			t.Fatalf("alice's session: %d", status)
		}
	}
	if status, _, _ := f.post(t, alice, ""); status != http.StatusTooManyRequests {
		t.Errorf("alice's third session: %d, want 429", status)
	}
	for range 2 {
		if status, _, _ := f.post(t, bob, ""); status != http.StatusOK {
			t.Errorf("bob's session from alice's address: %d, want it opened", status)
		}
	}
}

// TestClientKey: an IPv6 client counts as its /64, an IPv4 one as itself.
func TestClientKey(t *testing.T) {
	for addr, want := range map[string]string{"192.0.2.7": "192.0.2.7", "2001:db8:1:2:aaaa::1": "2001:db8:1:2::/64", "::1": "::/64"} {
		if got := showKey(clientKey(netip.MustParseAddr(addr))); got != want {
			t.Errorf("%s counts as %s, want %s", addr, got, want)
		}
	}
}

// TestPerCallerDefault: unset, a caller's share is a quarter of the
// gateway-wide cap (250 of the 1,000 default sessions, 128 of the 512
// default connections), at least 1; set, it is as set.
func TestPerCallerDefault(t *testing.T) {
	for _, c := range []struct{ configured, total, want int }{
		{0, DefaultMaxSessions, 250}, {0, DefaultMaxConnections, 128}, {0, 3, 1}, {7, 1000, 7},
	} {
		if got := perCaller(c.configured, c.total); got != c.want {
			t.Errorf("perCaller(%d, %d) = %d, want %d", c.configured, c.total, got, c.want)
		}
	}
}
