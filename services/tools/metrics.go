package tools

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// The registry's metrics: every call through Execute is counted by server,
// tool and outcome. server is "" for a tool of no MCP server (mcp_list,
// mcp_call, a plugin's own tool).
var (
	toolCallsDef = telemetry.Def{Name: "dsh_tool_calls_total", Kind: telemetry.Counter,
		Help:   "Tool calls through the tool registry, from any caller (gateway client, chat, console, call), by MCP server, tool and outcome.",
		Labels: []string{"server", "tool", "outcome"}}
	toolErrorsDef = telemetry.Def{Name: "dsh_tool_call_errors_total", Kind: telemetry.Counter,
		Help:   "The tool calls that did not succeed, by MCP server, tool and error type (the outcome).",
		Labels: []string{"server", "tool", "error_type"}}
	toolDurationDef = telemetry.Def{Name: "dsh_tool_call_duration_seconds", Kind: telemetry.Histogram,
		Help:   "Duration of tool calls through the tool registry, by MCP server, tool and outcome.",
		Labels: []string{"server", "tool", "outcome"},
		// From a local tool's fraction of a millisecond to a slow
		// server's minute.
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}}
)

// MetricDefs are the metrics the registry counts (docs/operations.md).
var MetricDefs = []telemetry.Def{toolCallsDef, toolErrorsDef, toolDurationDef}

// The tool call outcomes (the outcome label, and a span's error.type).
const (
	OutcomeOK            = "ok"
	OutcomeToolError     = "tool_error"     // the tool failed, or its server answered isError
	OutcomeRefused       = "refused"        // a guard, mask or hook refused the call
	OutcomeUnknownTool   = "unknown_tool"   // no such tool for the caller
	OutcomeCancelled     = "cancelled"      // the caller's context ended the call
	OutcomeInvalidOutput = "invalid_output" // the value failed the tool's outputSchema
	OutcomeError         = "error"          // anything else (a hook's panic, a render error)
)

// UnknownTool is the tool label of calls to names that are not registered.
const UnknownTool = "(unknown)"

// Metrics are a registry's metrics (Options.Metrics). A nil *Metrics
// records nothing.
type Metrics struct {
	calls    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	panics   prometheus.Counter
}

// NewMetrics registers the registry's metrics on reg (a scope's
// Registerer).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	var m Metrics
	var err error
	if m.calls, err = toolCallsDef.Counter(reg); err != nil {
		return nil, err
	}
	if m.errors, err = toolErrorsDef.Counter(reg); err != nil {
		return nil, err
	}
	if m.duration, err = toolDurationDef.Histogram(reg); err != nil {
		return nil, err
	}
	panics, err := telemetry.Panics.Counter(reg)
	if err != nil {
		return nil, err
	}
	// Present at 0 from the start, so that an alert on increase() sees
	// the first one.
	m.panics = panics.WithLabelValues(telemetry.PanicTool)
	return &m, nil
}

// call records one call's outcome and duration.
func (m *Metrics) call(server, tool, outcome string, d time.Duration) {
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.duration.WithLabelValues(server, tool, outcome).Observe(d.Seconds())
	if outcome != OutcomeOK {
		m.errors.WithLabelValues(server, tool, outcome).Inc()
	}
}

func (m *Metrics) panicked() {
	if m != nil {
		m.panics.Inc()
	}
}

// toolSeries are one tool's metrics, resolved once (Metrics.tool), so that
// a successful call costs two atomic updates and no label lookup. A nil
// *toolSeries records nothing.
type toolSeries struct {
	m            *Metrics
	server, tool string
	okCalls      prometheus.Counter
	okDuration   prometheus.Observer
}

// tool returns the metrics of server's tool; nil when m is nil.
func (m *Metrics) tool(server, tool string) *toolSeries {
	if m == nil {
		return nil
	}
	return &toolSeries{m: m, server: server, tool: tool,
		okCalls:    m.calls.WithLabelValues(server, tool, OutcomeOK),
		okDuration: m.duration.WithLabelValues(server, tool, OutcomeOK)}
}

// record records one call's outcome and duration.
func (s *toolSeries) record(outcome string, d time.Duration) {
	switch {
	case s == nil:
	case outcome == OutcomeOK:
		s.okCalls.Inc()
		s.okDuration.Observe(d.Seconds())
	default:
		s.m.call(s.server, s.tool, outcome, d)
	}
}
