package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// serveHTTP serves a gateway on reg over Streamable HTTP on 127.0.0.1:0.
func serveHTTP(t *testing.T, reg *tools.Registry, token string) (url string, g *Gateway) {
	t.Helper()
	g, err := New(scope(t), reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.HTTPHandler(token))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", g
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// post sends an initialize request with headers and returns the response
// status and the WWW-Authenticate header. A session it opened is deleted.
func post(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		del, _ := http.NewRequest(http.MethodDelete, url, nil)
		del.Header = req.Header.Clone()
		del.Host = req.Host
		del.Header.Set("Mcp-Session-Id", id)
		if r, err := http.DefaultClient.Do(del); err == nil {
			r.Body.Close()
		}
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

func TestHTTPChecks(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("echo"))
	open, _ := serveHTTP(t, reg, "")
	locked, _ := serveHTTP(t, reg, "s3cret-token")

	tests := []struct {
		name     string
		url      string
		header   map[string]string
		want     int
		wantAuth string
	}{
		{name: "no token configured, no Origin", url: open, want: http.StatusOK},
		{name: "localhost origin", url: open, header: map[string]string{"Origin": "http://localhost:6274"}, want: http.StatusOK},
		{name: "127.0.0.1 origin over https", url: open, header: map[string]string{"Origin": "https://127.0.0.1"}, want: http.StatusOK},
		{name: "[::1] origin", url: open, header: map[string]string{"Origin": "http://[::1]:8080"}, want: http.StatusOK},
		{name: "foreign origin", url: open, header: map[string]string{"Origin": "https://evil.example"}, want: http.StatusForbidden},
		{name: "localhost look-alike origin", url: open, header: map[string]string{"Origin": "http://localhost.evil.example"}, want: http.StatusForbidden},
		{name: "opaque origin", url: open, header: map[string]string{"Origin": "null"}, want: http.StatusForbidden},
		{name: "non-http origin", url: open, header: map[string]string{"Origin": "file://localhost"}, want: http.StatusForbidden},
		{name: "rebound Host header", url: open, header: map[string]string{"Host": "evil.example"}, want: http.StatusForbidden},
		{name: "token missing", url: locked, want: http.StatusUnauthorized, wantAuth: `Bearer realm="dsh-host"`},
		{name: "token wrong", url: locked, header: map[string]string{"Authorization": "Bearer s3cret-tokem"}, want: http.StatusUnauthorized, wantAuth: `Bearer realm="dsh-host"`},
		{name: "token prefix only", url: locked, header: map[string]string{"Authorization": "Bearer s3cret"}, want: http.StatusUnauthorized, wantAuth: `Bearer realm="dsh-host"`},
		{name: "token in another scheme", url: locked, header: map[string]string{"Authorization": "Basic s3cret-token"}, want: http.StatusUnauthorized, wantAuth: `Bearer realm="dsh-host"`},
		{name: "token right", url: locked, header: map[string]string{"Authorization": "Bearer s3cret-token"}, want: http.StatusOK},
		{name: "token right, scheme in lower case", url: locked, header: map[string]string{"Authorization": "bearer s3cret-token"}, want: http.StatusOK},
		{name: "token right but foreign origin", url: locked, header: map[string]string{"Authorization": "Bearer s3cret-token", "Origin": "https://evil.example"}, want: http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, auth := post(t, tt.url, tt.header)
			if status != tt.want {
				t.Errorf("status = %d, want %d", status, tt.want)
			}
			if auth != tt.wantAuth {
				t.Errorf("WWW-Authenticate = %q, want %q", auth, tt.wantAuth)
			}
		})
	}
}

func TestOriginAllowed(t *testing.T) {
	tests := []struct {
		origin, host string
		want         bool
	}{
		{"http://localhost", "127.0.0.1:8931", true},
		{"http://LOCALHOST:3000", "127.0.0.1:8931", true},
		{"http://127.0.0.1:9", "127.0.0.1:8931", true},
		{"http://[::1]", "127.0.0.1:8931", true},
		{"http://127.1.2.3", "127.0.0.1:8931", true},
		{"https://gw.example:8931", "gw.example:8931", true},
		{"https://gw.example", "gw.example:8931", false},
		{"https://evil.example", "gw.example:8931", false},
		{"http://0.0.0.0", "127.0.0.1:8931", false},
		{"null", "127.0.0.1:8931", false},
		{"chrome-extension://abc", "127.0.0.1:8931", false},
		{"::not a url", "127.0.0.1:8931", false},
	}
	for _, tt := range tests {
		if got := originAllowed(tt.origin, tt.host); got != tt.want {
			t.Errorf("originAllowed(%q, %q) = %v, want %v", tt.origin, tt.host, got, tt.want)
		}
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPClientSeesToolsAndChanges(t *testing.T) {
	reg := tools.New(nil)
	register(t, reg, echo("echo"))
	url, _ := serveHTTP(t, reg, "tok")

	changed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearerTransport{"tok"}},
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over http"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := mcptest.Texts(res); len(got) != 1 || got[0] != "over http" {
		t.Errorf("echo over HTTP = %q", got)
	}

	register(t, reg, echo("added"))
	select {
	case <-changed:
	case <-timeAfter():
		t.Fatal("no notifications/tools/list_changed over HTTP")
	}
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "added,echo" {
		t.Errorf("tools after the change = %v, want [added echo]", names)
	}
}

func timeAfter() <-chan time.Time { return time.After(wait) }
