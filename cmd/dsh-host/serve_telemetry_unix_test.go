//go:build unix

package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it keeps the
// name, trace id and service.name of every span exported to it.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct{ service, name, traceID string }

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var export coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &export)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, receivedSpan{service, s.GetName(), hex.EncodeToString(s.GetTraceId())})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *otlpReceiver) received() []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// TestServeExportsTracesAndMetrics runs serve with the standard OTLP
// variables pointing at a receiver in the test and --metrics: a client's
// traceparent reaches the MCP server in _meta, the scrape counts the call
// (and promtool accepts it), and the spans of the gateway, the registry
// and mcp-client, in the client's trace, reach the receiver by the time
// serve has exited on SIGTERM (the batch is flushed at exit, well before
// OTEL_BSP_SCHEDULE_DELAY).
func TestServeExportsTracesAndMetrics(t *testing.T) {
	receiver := &otlpReceiver{}
	collector := httptest.NewServer(receiver)
	defer collector.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	file := writeComposition(t, fmt.Sprintf("plugins:\n  - {id: fx, name: mcp-client, config: {serverName: fx, transport: stdio, command: %q, args: [-echo-meta]}}\n",
		mcptest.FixtureBinary(t)))
	cmd := command(t, ctx, "serve", "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--log-format", "json", "-c", file)
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_SERVICE_NAME=dsh-e2e", "OTEL_BSP_SCHEDULE_DELAY=600000")
	logs := startLogging(t, cmd)
	var url, metricsURL string
	waitLog(t, logs, "both listeners", func(m map[string]any) bool {
		switch m["msg"] {
		case "gateway listening":
			url, _ = m["url"].(string)
		case "metrics listening":
			metricsURL, _ = m["url"].(string)
		}
		return url != "" && metricsURL != ""
	})
	p := &gatewayProcess{cmd: cmd, logs: logs, base: strings.TrimSuffix(url, "/mcp"), url: url}
	p.waitReady(t)
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fx__meta", Meta: mcp.Meta{"traceparent": "00-" + traceID + "-b7ad6b7169203331-01"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, mcptest.Texts(res))
	}
	var upstream map[string]any
	if err := json.Unmarshal([]byte(mcptest.Texts(res)[0]), &upstream); err != nil {
		t.Fatal(err)
	}
	if tp, _ := upstream["traceparent"].(string); !strings.HasPrefix(tp, "00-"+traceID+"-") {
		t.Errorf("the server's traceparent = %q, want one of trace %s", tp, traceID)
	}
	cs.Close()

	resp, err := hc.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`dsh_tool_calls_total{entry="tools",outcome="ok",server="fx",tool="mcp__fx__meta"} 1`,
		`dsh_reloads_total{outcome="applied"} 1`,
		`dsh_upstream_up{entry="fx",server="fx"} 1`,
		`dsh_instances{state="active"} `,
	} {
		if !strings.Contains(string(scrape), "\n"+line) {
			t.Errorf("the scrape has no line %q:\n%s", line, scrape)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Error("promtool is not on PATH (apt-get install prometheus)")
		}
	} else {
		check := exec.CommandContext(ctx, promtool, "check", "metrics")
		check.Stdin = strings.NewReader(string(scrape))
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}

	p.signal(t)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v, want exit 0", err)
	}
	var got []string
	for _, s := range receiver.received() {
		if s.traceID == traceID && s.service == "dsh-e2e" {
			got = append(got, s.name)
		}
	}
	slices.Sort(got)
	want := []string{"execute_tool mcp__fx__meta", "tools/call mcp__fx__meta", "tools/call meta"}
	if !slices.Equal(got, want) {
		t.Errorf("spans of the client's trace at the receiver: %q, want %q (all: %v)", got, want, receiver.received())
	}
}
