package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// The gateway's gauges are read at each scrape (the request path pays
// nothing); the entry label names the gateway.
var (
	sessionsDef = telemetry.Def{Name: "dsh_gateway_sessions", Kind: telemetry.Gauge,
		Help: "MCP sessions the gateway serves."}
	connectionsDef = telemetry.Def{Name: "dsh_gateway_connections", Kind: telemetry.Gauge,
		Help: "Open connections to the gateway's HTTP listener."}
	inFlightDef = telemetry.Def{Name: "dsh_gateway_requests_in_flight", Kind: telemetry.Gauge,
		Help: "MCP requests the gateway is serving."}
	heldAnswerBytesDef = telemetry.Def{Name: "dsh_gateway_held_answer_bytes", Kind: telemetry.Gauge,
		Help: "Bytes of answers the gateway's listener holds for clients that have not read them yet (bounded by maxHeldAnswerBytes)."}
)

// The gateway's counters of what it refuses before any tool runs.
var (
	httpRefusalsDef = telemetry.Def{Name: "dsh_gateway_http_refusals_total", Kind: telemetry.Counter,
		Help:   "HTTP requests to the gateway's /mcp answered with an error status, and connections refused at its caps, by status code: 400 (a batch, a bad request), 401 (no or a wrong token), 403 (a foreign Origin or Host, a missing scope), 404 (an unknown session), 413 (a body too large), 429 (a caller past its share), 503 (past maxSessions or maxConnections, draining).",
		Labels: []string{"code"}}
	unknownToolsDef = telemetry.Def{Name: "dsh_gateway_unknown_tool_calls_total", Kind: telemetry.Counter,
		Help: "tools/call requests the gateway answered with unknown tool (-32602): a name it does not serve. The names are not labels: a caller makes them up."}
)

// MetricDefs are the metrics the gateway reports (docs/operations.md),
// besides dsh_panics_total (telemetry.Panics) with where gateway and http.
var MetricDefs = []telemetry.Def{sessionsDef, connectionsDef, inFlightDef, heldAnswerBytesDef, httpRefusalsDef, unknownToolsDef}

// Metrics are a gateway's metrics (Options.Metrics); a nil *Metrics
// records nothing.
type Metrics struct {
	reg          prometheus.Registerer
	panics       *prometheus.CounterVec
	refusals     *prometheus.CounterVec
	unknownTools prometheus.Counter
}

// NewMetrics registers the gateway's counters on reg (a scope's
// Registerer); its gauges are registered by the gateway and its
// listener, which read them.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	panics, err := telemetry.Panics.Counter(reg)
	if err != nil {
		return nil, err
	}
	refusals, err := httpRefusalsDef.Counter(reg)
	if err != nil {
		return nil, err
	}
	unknown, err := unknownToolsDef.Counter(reg)
	if err != nil {
		return nil, err
	}
	// Present at 0 from the start, so that an alert on increase() sees
	// the first one.
	for _, where := range []string{telemetry.PanicGateway, telemetry.PanicHTTP} {
		panics.WithLabelValues(where)
	}
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		refusals.WithLabelValues(strconv.Itoa(code))
	}
	return &Metrics{reg: reg, panics: panics, refusals: refusals, unknownTools: unknown.WithLabelValues()}, nil
}

// refused counts a request or connection answered with status (an error
// status; the codes are HTTP's three digits, a bounded label).
func (m *Metrics) refused(status int) {
	if m != nil && status >= 400 && status <= 599 {
		m.refusals.WithLabelValues(strconv.Itoa(status)).Inc()
	}
}

// countRefusals counts the /mcp requests answered with an error status,
// whoever answered them: the gateway's checks or go-sdk's (an unknown
// session, a body too large). It runs inside recoverHTTP, whose
// sentWriter knows the status.
func (g *Gateway) countRefusals(next http.Handler) http.Handler {
	if g.metrics == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if sw, ok := w.(*sentWriter); ok {
			g.metrics.refused(sw.status())
		}
	})
}

// countUnknownTools is a receiving middleware counting the tools/call
// requests go-sdk answers "unknown tool": they never reach the registry,
// whose metrics count the calls of the tools it has.
func (g *Gateway) countUnknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "tools/call" && unknownTool(err) {
			g.metrics.unknownTools.Inc()
		}
		return res, err
	}
}

// unknownTool reports whether err is go-sdk's answer to a tools/call of a
// name the server does not have.
func unknownTool(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpcErr.Message, "unknown tool")
}

// panicked counts a panic recovered at where (a telemetry.Panic constant).
func (m *Metrics) panicked(where string) {
	if m != nil {
		m.panics.WithLabelValues(where).Inc()
	}
}

// gauge reports def, read from f at each scrape, for the rest of the
// run (the host drops a run's series when it is disposed).
func (m *Metrics) gauge(def telemetry.Def, f func() int) error {
	if m == nil {
		return nil
	}
	return def.GaugeFunc(m.reg, func() float64 { return float64(f()) })
}
