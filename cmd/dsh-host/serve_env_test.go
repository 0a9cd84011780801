package main

import (
	"context"
	"math"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// bearer adds the gateway's token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeKeepsTheGatewayTokenFromServers: a stdio server never inherits
// the variable holding the gateway's token, though its name looks like no
// secret, whether --token-env or the composed gateway entry names it: the
// gateway declares it secret, and mcp-client starts servers from the
// scope's Environ, which leaves it out.
func TestServeKeepsTheGatewayTokenFromServers(t *testing.T) {
	const token = "gateway-token-0123456789abcdef"
	fixture := mcptest.FixtureBinary(t)
	server := "  - {id: fx, name: mcp-client, config: {serverName: fx, transport: stdio, command: '" + fixture + "'}}\n"
	for _, tt := range []struct {
		name, composition string
		args              []string
	}{
		{"--token-env", "plugins:\n" + server, []string{"--http", "127.0.0.1:0", "--token-env", "GW_BEARER"}},
		{"the entry's tokenEnv", "plugins:\n" + server + "  - {id: gw, name: gateway, config: {http: 127.0.0.1:0, tokenEnv: GW_BEARER}}\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DSH_HOME", t.TempDir())
			t.Setenv("GW_BEARER", token)
			t.Setenv("GW_CANARY", "passed")
			file := writeComposition(t, tt.composition)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := serveInProcess(t, ctx, append(tt.args, "-c", file)...)
			var url string
			waitLog(t, s.logs, "the listener", func(m map[string]any) bool {
				url, _ = m["url"].(string)
				return m["msg"] == "serving MCP over Streamable HTTP"
			})
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__env"})
			cs.Close()
			if err != nil || res.IsError || len(res.Content) == 0 {
				t.Fatalf("env: %v %+v", err, res)
			}
			env := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(env, "GW_CANARY=passed") {
				t.Errorf("the server's environment is not the host's:\n%s", env)
			}
			if strings.Contains(env, "GW_BEARER") || strings.Contains(env, token) {
				t.Errorf("the server inherited the gateway's token:\n%s", env)
			}
			cancel() // SIGINT
			if code := s.exit(t); code != exitOK {
				t.Errorf("exit %d, want 0\n%s", code, s.stderr)
			}
		})
	}
}

// TestServeTunesGCUnlessTheEnvironmentDoes: serve collects at GOGC=400
// under a 256 MiB soft limit, and leaves each to the environment where it
// sets it.
func TestServeTunesGCUnlessTheEnvironmentDoes(t *testing.T) {
	gcPercent, memLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(gcPercent); debug.SetMemoryLimit(memLimit) })
	for _, tt := range []struct {
		name             string
		env              map[string]string
		percent, limitMB int64
	}{
		{"unset", nil, 400, 256},
		{"GOGC set", map[string]string{"GOGC": "100"}, 100, 256},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 400, math.MaxInt64 >> 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			tuneGC(func(k string) string { return tt.env[k] })
			if got := int64(debug.SetGCPercent(100)); got != tt.percent {
				t.Errorf("GOGC = %d, want %d", got, tt.percent)
			}
			if got := debug.SetMemoryLimit(-1) >> 20; got != tt.limitMB {
				t.Errorf("memory limit = %d MiB, want %d", got, tt.limitMB)
			}
		})
	}
}
