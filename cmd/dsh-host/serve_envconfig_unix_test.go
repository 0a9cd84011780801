//go:build unix

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/tlstest"
)

// TestServeFromEnvironment: serve configured by its environment alone, as
// a container or a systemd unit does: the address, JSON logs, the token
// from a file and TLS from DSH_ variables; a flag given wins over a bad
// variable, which is then never read.
func TestServeFromEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	certFile, keyFile, tokenFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "token")
	cert := tlstest.New(t, 1)
	cert.Write(t, certFile, keyFile)
	pool := cert.Pool()
	const token = "env-configured-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := writeComposition(t, fmt.Sprintf("plugins:\n  - {id: fx, name: mcp-client, config: {serverName: fx, transport: stdio, command: %q}}\n", mcptest.FixtureBinary(t)))
	cmd := command(t, ctx, "serve", "-c", file, "--list-wait", "1s")
	cmd.Env = append(cmd.Env, "DSH_SERVE_ADDR=127.0.0.1:0", "DSH_LOG_FORMAT=json", "DSH_TOKEN_FILE="+tokenFile,
		"DSH_TLS_CERT="+certFile, "DSH_TLS_KEY="+keyFile, "DSH_LIST_WAIT=not-a-duration")
	logs := startLogging(t, cmd) // parses JSON lines: DSH_LOG_FORMAT took
	var listening map[string]any
	waitLog(t, logs, "the listener", func(m map[string]any) bool {
		listening = m
		return m["msg"] == "gateway listening"
	})
	url, _ := listening["url"].(string)
	if !strings.HasPrefix(url, "https://127.0.0.1:") || listening["token"] != true || listening["tls"] != true {
		t.Fatalf("listening: %v, want https on 127.0.0.1 with a token", listening)
	}
	for _, v := range listening {
		if s, ok := v.(string); ok && strings.Contains(s, token) {
			t.Errorf("the log shows the token: %v", listening)
		}
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", resp.StatusCode)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerOver{tr, token}}}, nil)
	if err != nil {
		t.Fatalf("connect over https with the file's token: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	cs.Close()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGINT: %v", err)
	}
}

// bearerOver adds the token to every request over rt.
type bearerOver struct {
	rt    http.RoundTripper
	token string
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}
