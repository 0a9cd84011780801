package limits

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

const busy = -32000

func newLimits(cfg Config) *PerIdentity {
	return New(cfg, Server{
		Uncounted: func(m string) bool { return m == "initialize" || m == "ping" || strings.HasPrefix(m, "notifications/") },
		BusyCode:  busy,
	})
}

// call is a request of method by user ("" for one without a token).
func call(user string) *mcp.CallToolRequest {
	r := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t"}}
	if user != "" {
		r.Extra = &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: user}}
	}
	return r
}

func ok(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.CallToolResult{}, nil }

// refusedAs says how a result refuses (its text), "" when it does not.
func refusedAs(t *testing.T) func(mcp.Result, error) string {
	return func(res mcp.Result, err error) string { return refused(t, res, err) }
}

func refused(t *testing.T, res mcp.Result, err error) string {
	t.Helper()
	var je *jsonrpc.Error
	switch r, _ := res.(*mcp.CallToolResult); {
	case errors.As(err, &je):
		if je.Code != busy {
			t.Errorf("code %d", je.Code)
		}
		return je.Message
	case err != nil:
		t.Fatalf("error %v", err)
	case r != nil && r.IsError:
		return r.Content[0].(*mcp.TextContent).Text
	}
	return ""
}

// TestRate: each identity has its own bucket; past it a tool call is a
// tool error, another request a JSON-RPC error, a notification dropped,
// and a cancel passes all the same; a request without a token is not
// counted.
func TestRate(t *testing.T) {
	l := newLimits(Config{RequestsPerSecond: 0.001, Burst: 2})
	mw := l.Middleware(ok)
	for i := range 2 {
		if why := refusedAs(t)(mw(context.Background(), "tools/call", call("alice"))); why != "" {
			t.Fatalf("request %d refused: %s", i, why)
		}
	}
	if why := refusedAs(t)(mw(context.Background(), "tools/call", call("alice"))); !strings.Contains(why, "requestsPerSecond") {
		t.Errorf("third call: %q, want a refusal naming requestsPerSecond", why)
	}
	if why := refusedAs(t)(mw(context.Background(), "resources/list", call("alice"))); !strings.Contains(why, "requestsPerSecond") {
		t.Errorf("list: %q", why)
	}
	passed := false
	note := func(context.Context, string, mcp.Request) (mcp.Result, error) { passed = true; return nil, nil }
	if res, err := l.Middleware(note)(context.Background(), "notifications/progress", call("alice")); res != nil || err != nil || passed {
		t.Errorf("a notification past the limit: %v %v passed=%v, want dropped", res, err, passed)
	}
	if _, err := l.Middleware(note)(context.Background(), "notifications/cancelled", call("alice")); err != nil || !passed {
		t.Errorf("a cancel past the limit: %v passed=%v, want passed", err, passed)
	}
	if why := refusedAs(t)(mw(context.Background(), "tools/call", call("bob"))); why != "" {
		t.Errorf("bob refused for alice's rate: %s", why)
	}
	for range 5 {
		if why := refusedAs(t)(mw(context.Background(), "tools/call", call(""))); why != "" {
			t.Errorf("no token: %s", why)
		}
	}
}

// TestCallsInFlight: an identity's calls running at once are capped; a
// call that ends gives its place back; ping is uncounted.
func TestCallsInFlight(t *testing.T) {
	l := newLimits(Config{CallsInFlight: 1})
	started, release := make(chan struct{}), make(chan struct{})
	slow := l.Middleware(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		close(started)
		<-release
		return &mcp.CallToolResult{}, nil
	})
	type answer struct {
		res mcp.Result
		err error
	}
	done := make(chan answer)
	go func() {
		res, err := slow(context.Background(), "tools/call", call("alice"))
		done <- answer{res, err}
	}()
	<-started
	mw := l.Middleware(ok)
	if why := refusedAs(t)(mw(context.Background(), "tools/call", call("alice"))); !strings.Contains(why, "callsInFlight") {
		t.Errorf("second call in flight: %q", why)
	}
	if why := refusedAs(t)(mw(context.Background(), "ping", call("alice"))); why != "" {
		t.Errorf("ping: %q", why)
	}
	if why := refusedAs(t)(mw(context.Background(), "tools/call", call("bob"))); why != "" {
		t.Errorf("bob: %q", why)
	}
	close(release)
	if a := <-done; refused(t, a.res, a.err) != "" {
		t.Fatal("the first call was refused")
	}
	if why := refusedAs(t)(mw(context.Background(), "tools/call", call("alice"))); why != "" {
		t.Errorf("after the first ended: %q", why)
	}
}

// TestAdmit: a request that opens a session is refused over HTTP (429's
// Retry-After) once the bucket is empty; requests in a session and GETs
// are left to the middleware.
func TestAdmit(t *testing.T) {
	l := newLimits(Config{RequestsPerSecond: 0.5, Burst: 1})
	alice := &auth.TokenInfo{UserID: "alice"}
	post := func(session string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		return r
	}
	if ref := l.Admit(post(""), alice); ref != nil {
		t.Fatalf("first: %+v", ref)
	}
	l.Middleware(ok)(context.Background(), "initialize", call("alice"))
	ref := l.Admit(post(""), alice)
	if ref == nil || ref.RetryAfter < 1 || ref.RetryAfter > 2 || !strings.Contains(ref.Message, "requestsPerSecond") {
		t.Fatalf("empty bucket: %+v, want a refusal retrying in 1-2 s", ref)
	}
	if ref := l.Admit(post("s1"), alice); ref != nil {
		t.Errorf("in a session: %+v", ref)
	}
	if ref := l.Admit(httptest.NewRequest(http.MethodGet, "/mcp", nil), alice); ref != nil {
		t.Errorf("GET: %+v", ref)
	}
	if ref := l.Admit(post(""), &auth.TokenInfo{UserID: "bob"}); ref != nil {
		t.Errorf("bob: %+v", ref)
	}
}

// TestConfigValidate: each bad key is named, relative to the block.
func TestConfigValidate(t *testing.T) {
	nan := 0.0
	nan /= nan
	tests := []struct {
		cfg Config
		key string
	}{
		{Config{}, ""},
		{Config{RequestsPerSecond: 2, Burst: 5, CallsInFlight: 3, Sessions: 2}, ""},
		{Config{RequestsPerSecond: -1}, "requestsPerSecond"},
		{Config{RequestsPerSecond: nan}, "requestsPerSecond"},
		{Config{Burst: -1}, "burst"},
		{Config{Burst: 3}, "burst"},
		{Config{CallsInFlight: -1}, "callsInFlight"},
		{Config{Sessions: -1}, "sessions"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		var ke *host.KeyError
		switch {
		case tt.key == "" && err != nil:
			t.Errorf("%+v: %v", tt.cfg, err)
		case tt.key != "" && (!errors.As(err, &ke) || ke.Key != tt.key):
			t.Errorf("%+v: %v, want a KeyError for %s", tt.cfg, err, tt.key)
		}
	}
}
