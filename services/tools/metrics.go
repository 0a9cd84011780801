package tools

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// The registry's metrics: every call through Execute is counted by server,
// tool and outcome. server is "" for a tool of no MCP server (mcp_list,
// mcp_call, a plugin's own tool). The tool label may be bounded
// (ToolLabel: a metrics entry's toolLabel and toolLabelLimit), and a
// tool's series go when the tool does (forget.go).
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

	// gen counts the changes of the tool label's policy: a tool's cached
	// series (toolSeries.gen) older than it is resolved again.
	gen atomic.Uint64
	mu  sync.Mutex
	// label is the tool label's policy, owned by owner (the scope that
	// set it, nil for the default); named are, under a limit, the tools
	// given their own label value, by server and tool.
	label   ToolLabel
	owner   *host.Scope
	ownerID string
	named   map[serverTool]bool
	// called are the tools given series labelled by their name, so that
	// only they are noted when they leave (bounded as their series are).
	called map[serverTool]bool
	// gone are the tools, and servers (tool ""), that left the registry,
	// since when, with their tools' cached series: their series are
	// deleted at the first scrape past forgetAfter (forget.go).
	gone map[serverTool]leftTool
	now  func() time.Time
}

type serverTool struct{ server, tool string }

// NewMetrics registers the registry's metrics on reg (a scope's
// Registerer).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := Metrics{calls: toolCallsDef.NewCounter(), errors: toolErrorsDef.NewCounter(), duration: toolDurationDef.NewHistogram(),
		named: map[serverTool]bool{}, called: map[serverTool]bool{}, gone: map[serverTool]leftTool{}, now: time.Now}
	if err := errors.Join(toolCallsDef.Register(reg, forgetting{&m, m.calls}),
		toolErrorsDef.Register(reg, forgetting{&m, m.errors}),
		toolDurationDef.Register(reg, forgetting{&m, m.duration})); err != nil {
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
	m *Metrics
	// gen is the label policy's (Metrics.gen) the series were resolved
	// under; tool is the label value (the name, "other" or "").
	gen          uint64
	server, tool string
	okCalls      prometheus.Counter
	okDuration   prometheus.Observer
	// gone is set once the tool left the registry and its series were
	// deleted: a call still in flight then records nothing, rather than
	// bring a deleted series back.
	gone atomic.Bool
}

// tool returns the metrics of server's tool; nil when m is nil.
func (m *Metrics) tool(server, tool string) *toolSeries {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	value := m.labelLocked(server, tool)
	if value == tool && tool != UnknownTool {
		m.called[serverTool{server, tool}] = true
	}
	return &toolSeries{m: m, gen: m.gen.Load(), server: server, tool: value,
		okCalls:    m.calls.WithLabelValues(server, value, OutcomeOK),
		okDuration: m.duration.WithLabelValues(server, value, OutcomeOK)}
}

// current reports whether s was resolved under the label policy in force.
func (s *toolSeries) current() bool { return s != nil && s.gen == s.m.gen.Load() }

// record records one call's outcome and duration.
func (s *toolSeries) record(outcome string, d time.Duration) {
	switch {
	case s == nil || s.gone.Load():
	case outcome == OutcomeOK:
		// A child deleted meanwhile (forget, a new policy) counts into
		// nothing gathered: no series comes back.
		s.okCalls.Inc()
		s.okDuration.Observe(d.Seconds())
	default:
		// Resolving a series by its labels would make it anew: under mu,
		// so that neither forget nor a new policy has just deleted it.
		s.m.mu.Lock()
		defer s.m.mu.Unlock()
		if !s.gone.Load() && s.current() {
			s.m.call(s.server, s.tool, outcome, d)
		}
	}
}
