package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/gateway/bearer"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/oauthtest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// BenchmarkAuth measures inbound OAuth's cost in tool calls per second
// through the gateway with auth off and on,
// side by side (alternating phases of load by N sessions on their own
// connections, as BenchmarkThroughput does), calling a tool of the
// registry itself, so that the gateway's own work is all there is. The
// check of one token alone is package bearer's BenchmarkAuth.
//
//	go test -run '^$' -bench Auth -benchtime 8x ./gateway
//
// DSH_BENCH_CLIENTS sets N (default 16), DSH_BENCH_PHASE a phase (1s).
func BenchmarkAuth(b *testing.B) {
	b.Run("throughput", func(b *testing.B) {
		clients := envInt(b, "DSH_BENCH_CLIENTS", 16)
		phase := time.Second
		if v := os.Getenv("DSH_BENCH_PHASE"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				b.Fatal(err)
			}
			phase = d
		}
		off := benchAuthGateway(b, nil)
		var token string
		on := benchAuthGateway(b, func(url string) *oauth {
			as := oauthtest.Start(b, oauthtest.Options{JWT: true, Resource: url})
			token = as.Sign(as.Claims("alice", []string{"admins"}, "mcp"))
			return newOAuth(AuthConfig{Config: bearer.Config{Issuer: as.Issuer, Audience: url}}, bearer.Options{})
		})
		// Both send the token (the gateway without auth ignores it), so
		// that the clients, in this process too, do the same work.
		paths := []*loadPath{
			{name: "auth off", tool: "ping", sessions: tokenSessions(b, off, token, clients)},
			{name: "auth on", tool: "ping", sessions: tokenSessions(b, on, token, clients)},
		}
		for _, p := range paths {
			p.run(b, nil, phase/4)
			p.calls, p.elapsed = 0, 0
		}
		i := 0
		for b.Loop() {
			for k := range paths {
				paths[(i+k)%len(paths)].run(b, nil, phase)
			}
			i++
		}
		offRate, onRate := paths[0].rate(), paths[1].rate()
		b.ReportMetric(offRate, "off-calls/s")
		b.ReportMetric(onRate, "on-calls/s")
		b.ReportMetric(100*onRate/offRate, "on/off-%")
	})
}

// benchAuthGateway serves a gateway with the tool ping on a loopback
// port, with the authenticator auth returns for its URL (nil: no auth).
func benchAuthGateway(b *testing.B, auth func(url string) *oauth) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	s := host.NewScope(context.Background(), "bench", nil)
	b.Cleanup(func() { _ = s.Dispose(wait) })
	reg := tools.New(nil)
	if _, err := reg.Register(s, tools.Definition{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, tools.Call) (tools.Output, error) {
			return tools.Output{Value: "pong", Content: []tools.Content{tools.Text("pong")}}, nil
		}}); err != nil {
		b.Fatal(err)
	}
	var cfg Config
	if auth != nil {
		cfg.Auth = &AuthConfig{} // each identity its tools, as with an auth block
	}
	g, err := New(s, reg, &cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	o := serveOptions{}
	if auth != nil {
		o.auth = auth(url)
		s.OnDispose("auth", o.auth.verifier.Close)
	}
	serve(s, g, ln, o)
	return url
}

// tokenSessions connects n clients with token ("" none), each on its own
// connection.
func tokenSessions(b *testing.B, url, token string, n int) []*mcp.ClientSession {
	b.Helper()
	out := make([]*mcp.ClientSession, n)
	for i := range out {
		tr := &http.Transport{MaxIdleConnsPerHost: 1}
		var rt http.RoundTripper = tr
		if token != "" {
			rt = &tokenTransport{token: token, base: tr}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, nil)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		out[i] = cs
		b.Cleanup(func() {
			cs.Close()
			tr.CloseIdleConnections()
		})
	}
	return out
}
