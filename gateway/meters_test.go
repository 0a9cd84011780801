package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestRefusalsAndUnknownToolsCounted: what the gateway refuses before any
// tool runs is counted, scraped over HTTP: HTTP answers with an error
// status by code (no token 401, a foreign Origin 403, a batch 400, an
// unknown session 404, a body past go-sdk's 4 MiB 413), a connection past
// maxConnections (503), and a tools/call of a name it does not serve
// (-32602, with no label of the name).
func TestRefusalsAndUnknownToolsCounted(t *testing.T) {
	const token = "refusals-token-0123456789"
	t.Setenv("DSH_TEST_REFUSALS_TOKEN", token)
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler), Metrics: telemetry.NewRegistry()})
	t.Cleanup(func() { h.Shutdown(context.Background()) })
	composition := fmt.Sprintf(`plugins:
  - id: fixture
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q}
  - id: gateway
    name: gateway
    config: {http: "127.0.0.1:0", metrics: "127.0.0.1:0", tokenEnv: DSH_TEST_REFUSALS_TOKEN, maxConnections: 8, maxConnectionsPerCaller: 8}
`, mcptest.FixtureBinary(t))
	c, err := host.ParseComposition("refusals.yml", []byte(composition), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	mcpURL, metricsURL, _ := strings.Cut(host.Find(h.Status(), "gateway").Detail, "; metrics at ")
	plain := &http.Transport{}
	t.Cleanup(plain.CloseIdleConnections)
	hc := &http.Client{Transport: plain, Timeout: wait}

	post := func(body string, header ...string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	auth := "Bearer " + token
	codes := []int{
		post(ping),
		post(ping, "Authorization", "Bearer wrong"),
		post(ping, "Authorization", auth, "Origin", "https://evil.example"),
		post("["+ping+"]", "Authorization", auth),
		post(ping, "Authorization", auth, "Mcp-Session-Id", "no-such-session"),
		post(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`+strings.Repeat("a", 5<<20)+`"}}`, "Authorization", auth),
	}
	if diff := cmp.Diff([]int{401, 401, 403, 400, 404, 413}, codes); diff != "" {
		t.Fatalf("the refused requests' status (-want +got):\n%s", diff)
	}

	cs := mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: mcpURL,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, name := range []string{"no_such_tool", "mcp__fx__nope"} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("call %s: %v, want unknown tool (-32602)", name, err)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__ping"}); err != nil {
		t.Fatal(err)
	}

	// Connections past maxConnections: each held open after its answer
	// (404: not /mcp, so not a refusal of its own) until one is refused
	// (503, or 429 if this client's share is reached first).
	refused := ""
	for range 16 {
		c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(mcpURL, "http://"), "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(wait))
		fmt.Fprintf(c, "GET /held HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if code := strings.Fields(line + " x")[1]; code != "404" {
			refused = code
			break
		}
	}
	if refused != "429" && refused != "503" {
		t.Fatalf("no connection was refused past maxConnections (%q)", refused)
	}

	resp, err := hc.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range fams["dsh_gateway_http_refusals_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "code" {
				got[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	for _, m := range fams["dsh_gateway_unknown_tool_calls_total"].GetMetric() {
		if len(m.GetLabel()) != 1 { // entry only
			t.Errorf("the unknown-tool counter has labels %v", m.GetLabel())
		}
		got["unknown tools"] = m.GetCounter().GetValue()
	}
	want := map[string]float64{"400": 1, "401": 2, "403": 1, "404": 1, "413": 1, "429": 0, "503": 0, "unknown tools": 2}
	want[refused]++
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the counters (-want +got):\n%s", diff)
	}
}
