package mcpclient

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// An MCP server's connection, as each run of an entry sees it. While a
// changed entry's new run starts beside the old one, the host reports the
// newer run's dsh_upstream_up and the sum of both runs' reconnects.
var (
	upstreamUpDef = telemetry.Def{Name: "dsh_upstream_up", Kind: telemetry.Gauge,
		Help:   "1 while the MCP server's tools are callable (connected, or lazy and idle), 0 while it connects, reconnects or was given up on.",
		Labels: []string{"server"}}
	upstreamReconnectsDef = telemetry.Def{Name: "dsh_upstream_reconnects_total", Kind: telemetry.Counter,
		Help:   "Connection attempts to an MCP server after a failed start or a lost connection.",
		Labels: []string{"server"}}
)

// MetricDefs are the metrics mcp-client counts (docs/operations.md).
var MetricDefs = []telemetry.Def{upstreamUpDef, upstreamReconnectsDef}

// upstreamMetrics are one run's; a nil *upstreamMetrics records nothing.
type upstreamMetrics struct {
	up         prometheus.Gauge
	reconnects prometheus.Counter
}

// newUpstreamMetrics registers server's series on reg, down until setUp.
func newUpstreamMetrics(reg prometheus.Registerer, server string) (*upstreamMetrics, error) {
	up, err := upstreamUpDef.Gauge(reg)
	if err != nil {
		return nil, err
	}
	reconnects, err := upstreamReconnectsDef.Counter(reg)
	if err != nil {
		return nil, err
	}
	return &upstreamMetrics{up: up.WithLabelValues(server), reconnects: reconnects.WithLabelValues(server)}, nil
}

// setUp records whether the server's tools are callable.
func (u *upstreamMetrics) setUp(up bool) {
	if u == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	u.up.Set(v)
}

// reconnect counts a connection attempt after a failure.
func (u *upstreamMetrics) reconnect() {
	if u != nil {
		u.reconnects.Inc()
	}
}
