package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// fuzzSeeds are JSON-RPC messages a client may send to /mcp, the shapes
// that once crashed a traced gateway among them (a tools/call of an
// unknown tool, or without a name).
var fuzzSeeds = []string{
	initialize,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool"}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fails","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","progressToken":1}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":null}`,
	`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}`,
	`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`,
	`{"jsonrpc":"2.0","id":10,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}}`,
	`{"jsonrpc":"2.0","id":11,"method":"logging/setLevel","params":{"level":"debug"}}`,
	`{"jsonrpc":"2.0","id":12,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":13,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
	`{"jsonrpc":"2.0","id":15,"result":{}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{"jsonrpc":"2.0","id":{},"method":"tools/list"}`,
	`{}`,
	`null`,
}

// fuzzTarget is a traced, metered gateway over HTTP, stateful with one
// session open, and stateless for the 2026-07-28 protocol.
type fuzzTarget struct {
	stateful, stateless string
	session             string
	hc                  *http.Client
	metrics             []prometheus.Gatherer
}

func newFuzzTarget(tb testing.TB) *fuzzTarget {
	s := host.NewScope(context.Background(), "fuzz", slog.New(slog.DiscardHandler))
	tb.Cleanup(func() { s.Dispose(wait) })
	reg := tools.New(&tools.Options{Logger: slog.New(slog.DiscardHandler)})
	e := echo("echo")
	if _, err := reg.Register(s, e); err != nil {
		tb.Fatal(err)
	}
	if _, err := reg.Register(s, tools.Definition{Name: "fails", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		return tools.Output{}, io.ErrUnexpectedEOF
	}}); err != nil {
		tb.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	tb.Cleanup(func() { tp.Shutdown(context.Background()) })
	// Each gateway counts into a registry of its own, as each run does
	// on a host.
	pr, prs := prometheus.NewRegistry(), prometheus.NewRegistry()
	m, err := NewMetrics(pr)
	if err != nil {
		tb.Fatal(err)
	}
	ms, err := NewMetrics(prs)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := New(s, reg, nil, &Deps{Tracer: tp.Tracer("fuzz"), Metrics: m})
	if err != nil {
		tb.Fatal(err)
	}
	// The stateless endpoint is another gateway of the same registry, as
	// a second replica would be.
	gs, err := New(s, reg, &Config{Stateless: true}, &Deps{Tracer: tp.Tracer("fuzz"), Metrics: ms})
	if err != nil {
		tb.Fatal(err)
	}
	stateful := httptest.NewServer(g.HTTPHandler(""))
	tb.Cleanup(stateful.Close)
	stateless := httptest.NewServer(gs.HTTPHandler(""))
	tb.Cleanup(stateless.Close)
	ft := &fuzzTarget{stateful: stateful.URL, stateless: stateless.URL, hc: &http.Client{Transport: &http.Transport{}}, metrics: []prometheus.Gatherer{pr, prs}}
	tb.Cleanup(ft.hc.CloseIdleConnections)
	resp := ft.must(tb, ft.stateful, "", "", initialize)
	if resp.status != http.StatusOK || resp.session == "" {
		tb.Fatalf("initialize: %d", resp.status)
	}
	ft.session = resp.session
	ft.must(tb, ft.stateful, ft.session, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return ft
}

type fuzzAnswer struct {
	status  int
	session string
	body    string
}

// fuzzWait bounds the answer to a fuzzed body: a request may legitimately
// last (a subscriptions/listen), and is then let go.
const fuzzWait = 500 * time.Millisecond

// post posts a fuzzed body, let go after fuzzWait.
func (ft *fuzzTarget) post(tb testing.TB, url, session, version, body string) fuzzAnswer {
	return ft.postWithin(tb, fuzzWait, url, session, version, body)
}

// must posts a request the gateway must answer (an initialize, a ping):
// bounded by wait, not fuzzWait, which a loaded machine can miss.
func (ft *fuzzTarget) must(tb testing.TB, url, session, version, body string) fuzzAnswer {
	return ft.postWithin(tb, wait, url, session, version, body)
}

func (ft *fuzzTarget) postWithin(tb testing.TB, d time.Duration, url, session, version, body string) fuzzAnswer {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := ft.hc.Do(req)
	if err != nil {
		return fuzzAnswer{} // cut by fuzzWait, or refused: not a crash
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fuzzAnswer{resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)}
}

// FuzzGatewayRequest posts arbitrary bodies to a traced, metered gateway:
// without a session (as an opening request), in an open session, and to a
// stateless gateway speaking 2026-07-28. Any panic fails it: one that
// escapes ends the process; one the panic net catches is counted
// (dsh_panics_total), which fails it too, as does a 500. The gateway must
// still answer a ping after each body.
//
//	go test -run '^$' -fuzz '^FuzzGatewayRequest$' -fuzztime 20s ./gateway/
func FuzzGatewayRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	ft := newFuzzTarget(f)
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) && len(body) > 0 && body[0] != '{' && body[0] != '[' {
			// Not JSON at all: go-sdk refuses it before any handler.
			// Still posted once, to the opening path.
			ft.post(t, ft.stateful, "", "", body)
			return
		}
		for _, a := range []fuzzAnswer{
			ft.post(t, ft.stateful, "", "", body),
			ft.post(t, ft.stateful, ft.session, "2025-06-18", body),
			ft.post(t, ft.stateless, "", "2026-07-28", body),
		} {
			if a.status == http.StatusInternalServerError && strings.Contains(a.body, "internal error") {
				t.Fatalf("the panic net answered %q: %s", body, a.body)
			}
		}
		if n := panicsTotal(t, ft.metrics...); n != 0 {
			t.Fatalf("%v panics recovered serving %q", n, body)
		}
		ping := ft.must(t, ft.stateful, ft.session, "2025-06-18", `{"jsonrpc":"2.0","id":"alive","method":"ping"}`)
		if ping.status != http.StatusOK || !strings.Contains(ping.body, `"alive"`) {
			// The fuzzed body may have ended the session (a DELETE
			// cannot come from a POST, but an error can close it):
			// the gateway must still open a new one.
			if again := ft.must(t, ft.stateful, "", "", initialize); again.status != http.StatusOK {
				t.Fatalf("after %q the gateway answers neither the session's ping (%d %s) nor an initialize (%d %s)", body, ping.status, ping.body, again.status, again.body)
			}
		}
	})
}

// panicsTotal sums dsh_panics_total over every where.
func panicsTotal(t *testing.T, gs ...prometheus.Gatherer) float64 {
	total := 0.0
	for _, g := range gs {
		families, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "dsh_panics_total" {
				for _, mt := range f.GetMetric() {
					total += mt.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
