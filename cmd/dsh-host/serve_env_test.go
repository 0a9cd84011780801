package main

import (
	"context"
	"net/http"
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
