package gateway

import (
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

// MetricDefs are the metrics the gateway reports (docs/operations.md),
// besides dsh_panics_total (telemetry.Panics) with where gateway and http.
var MetricDefs = []telemetry.Def{sessionsDef, connectionsDef, inFlightDef, heldAnswerBytesDef}

// Metrics are a gateway's metrics (Options.Metrics); a nil *Metrics
// records nothing.
type Metrics struct {
	reg    prometheus.Registerer
	panics *prometheus.CounterVec
}

// NewMetrics registers the gateway's panic counter on reg (a scope's
// Registerer); its gauges are registered by the gateway and its
// listener, which read them.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	panics, err := telemetry.Panics.Counter(reg)
	if err != nil {
		return nil, err
	}
	// Present at 0 from the start, so that an alert on increase() sees
	// the first one.
	for _, where := range []string{telemetry.PanicGateway, telemetry.PanicHTTP} {
		panics.WithLabelValues(where)
	}
	return &Metrics{reg: reg, panics: panics}, nil
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
