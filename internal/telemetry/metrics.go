package telemetry

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dsh-host/dsh-host/internal/version"
)

// Metrics are the process's Prometheus metrics, in a registry of their own
// (never client_golang's default one, which is global). Every method of a
// nil *Metrics does nothing, so that callers need no check of their own.
//
// The metric names (README.md, "Metrics", lists them):
//
//	dsh_tool_calls_total{server,tool,outcome}               calls through the tool registry (tool "(unknown)": a name not registered)
//	dsh_tool_call_errors_total{server,tool,error_type}      the calls among them that failed
//	dsh_tool_call_duration_seconds{server,tool,outcome}     their latency (histogram)
//	dsh_upstream_up{server}                                 1 while an MCP server is connected
//	dsh_upstream_reconnects_total{server}                   reconnect attempts to an MCP server
//	dsh_gateway_sessions{gateway}                           MCP sessions a gateway serves
//	dsh_gateway_connections{gateway}                        open connections to a gateway's listener
//	dsh_gateway_requests_in_flight{gateway}                 MCP requests a gateway is serving
//	dsh_gateway_held_answer_bytes{gateway}                  answer bytes held for clients that have not read them
//	dsh_reloads_total{outcome}                              composition loads: applied, failed, skipped
//	dsh_instances{state}                                    composition entries by state
//	dsh_policy_decisions_total{action,outcome}              the policy's decisions on calls
//	dsh_panics_total{where}                                 panics recovered while serving one request
//	dsh_build_info{version,commit,goversion}                1: the build the process runs (internal/version)
//
// server is "" for a tool of no MCP server (mcp_list, mcp_call, a
// plugin's own tool).
type Metrics struct {
	reg *prometheus.Registry

	toolCalls    *prometheus.CounterVec
	toolErrors   *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec

	upstreamReconnects *prometheus.CounterVec
	// upstreams are the live MCP server instances, for dsh_upstream_up;
	// guarded by mu.
	upstreams map[*Upstream]struct{}
	seq       uint64 // the last Upstream's, under mu

	policyDecisions *prometheus.CounterVec
	panics          *prometheus.CounterVec

	// mu serializes the registration of the per-instance collectors, and
	// guards upstreams.
	mu sync.Mutex
}

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

// NewMetrics returns metrics in a new registry, with the Go runtime's and
// the process's collectors.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), upstreams: map[*Upstream]struct{}{}}
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dsh_tool_calls_total",
		Help: "Tool calls through the tool registry, by MCP server, tool and outcome.",
	}, []string{"server", "tool", "outcome"})
	m.toolErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dsh_tool_call_errors_total",
		Help: "Tool calls that did not succeed, by MCP server, tool and error type.",
	}, []string{"server", "tool", "error_type"})
	m.toolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dsh_tool_call_duration_seconds",
		Help: "Duration of tool calls through the tool registry, by MCP server, tool and outcome.",
		// From a local tool's fraction of a millisecond to a slow
		// server's minute.
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"server", "tool", "outcome"})
	m.upstreamReconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dsh_upstream_reconnects_total",
		Help: "Reconnect attempts to an MCP server after its connection was lost.",
	}, []string{"server"})
	m.policyDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dsh_policy_decisions_total",
		Help: "The policy's decisions on tool calls, by action of the deciding rule (allow, ask, deny) and outcome (allowed, refused).",
	}, []string{"action", "outcome"})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dsh_panics_total",
		Help: "Panics recovered while serving one request (answered with an error, logged with their stack), by where: gateway (an MCP request's handling), http (the gateway's HTTP handlers), tool (a tool, hook or render in the tool registry).",
	}, []string{"where"})
	// Present at 0 from the start, so that an alert on increase() sees
	// the first one.
	for _, where := range []string{PanicGateway, PanicHTTP, PanicTool} {
		m.panics.WithLabelValues(where)
	}
	upstreams := upstreamCollector{m: m, desc: prometheus.NewDesc("dsh_upstream_up",
		"1 while the MCP server's tools are callable (connected, or lazy and idle), 0 while it connects, reconnects or was given up on.",
		[]string{"server"}, nil)}
	bi := version.Get()
	// A constant 1 whose labels say the build, so that a dashboard can
	// join any series with the version that produced it.
	buildInfo := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "dsh_build_info",
		Help:        "1, labelled with the version, commit and Go version of the dsh-host build serving.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "goversion": bi.GoVersion},
	}, func() float64 { return 1 })
	m.reg.MustRegister(buildInfo, m.toolCalls, m.toolErrors, m.toolDuration, upstreams, m.upstreamReconnects, m.policyDecisions, m.panics,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the Prometheus registry, for a test's Gather.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the metrics in Prometheus text format (at /metrics).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// ToolCall records one call's outcome and duration.
func (m *Metrics) ToolCall(server, tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(server, tool, outcome).Inc()
	m.toolDuration.WithLabelValues(server, tool, outcome).Observe(d.Seconds())
	if outcome != OutcomeOK {
		m.toolErrors.WithLabelValues(server, tool, outcome).Inc()
	}
}

// UnknownTool is the tool label of calls to names that are not registered.
const UnknownTool = "(unknown)"

// ToolSeries are one tool's metrics, resolved once (Metrics.Tool), so that
// a successful call costs two atomic updates and no label lookup. A nil
// *ToolSeries records nothing.
type ToolSeries struct {
	m            *Metrics
	server, tool string
	okCalls      prometheus.Counter
	okDuration   prometheus.Observer
}

// Tool returns the metrics of server's tool; nil when m is nil.
func (m *Metrics) Tool(server, tool string) *ToolSeries {
	if m == nil {
		return nil
	}
	return &ToolSeries{m: m, server: server, tool: tool,
		okCalls:    m.toolCalls.WithLabelValues(server, tool, OutcomeOK),
		okDuration: m.toolDuration.WithLabelValues(server, tool, OutcomeOK)}
}

// Record records one call's outcome and duration.
func (s *ToolSeries) Record(outcome string, d time.Duration) {
	switch {
	case s == nil:
	case outcome == OutcomeOK:
		s.okCalls.Inc()
		s.okDuration.Observe(d.Seconds())
	default:
		s.m.ToolCall(s.server, s.tool, outcome, d)
	}
}

// Upstream is one mcp-client instance's connection state, for
// dsh_upstream_up{server}. Two instances of one server run side by side
// while a changed entry overlaps its previous one: the newer one is
// reported. A nil *Upstream records nothing.
type Upstream struct {
	m      *Metrics
	server string
	seq    uint64
	up     atomic.Bool
}

// Upstream returns the state of a new instance of server, down until
// SetUp; Release it when the instance is disposed. Nil when m is nil.
func (m *Metrics) Upstream(server string) *Upstream {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	u := &Upstream{m: m, server: server, seq: m.seq}
	m.upstreams[u] = struct{}{}
	return u
}

// SetUp records whether the server's tools are callable.
func (u *Upstream) SetUp(up bool) {
	if u != nil {
		u.up.Store(up)
	}
}

// Reconnect counts a connection attempt after a failure.
func (u *Upstream) Reconnect() {
	if u != nil {
		u.m.upstreamReconnects.WithLabelValues(u.server).Inc()
	}
}

// Release stops reporting the instance: a server removed from the
// composition is not "down".
func (u *Upstream) Release() {
	if u == nil {
		return
	}
	u.m.mu.Lock()
	defer u.m.mu.Unlock()
	delete(u.m.upstreams, u)
}

// upstreamCollector reports, at each scrape, the newest instance of every
// server.
type upstreamCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

func (c upstreamCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	newest := map[string]*Upstream{}
	for u := range c.m.upstreams {
		if n := newest[u.server]; n == nil || u.seq > n.seq {
			newest[u.server] = u
		}
	}
	c.m.mu.Unlock()
	for server, u := range newest {
		v := 0.0
		if u.up.Load() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, server)
	}
}

// PolicyDecision counts a decision: action is the deciding rule's (allow,
// ask, deny), allowed whether the call went on.
func (m *Metrics) PolicyDecision(action string, allowed bool) {
	if m == nil {
		return
	}
	outcome := "allowed"
	if !allowed {
		outcome = "refused"
	}
	m.policyDecisions.WithLabelValues(action, outcome).Inc()
}

// Where a recovered panic happened (dsh_panics_total's where label).
const (
	PanicGateway = "gateway" // an MCP request's handling in the gateway (middleware, handlers)
	PanicHTTP    = "http"    // the gateway's HTTP handlers, before or around go-sdk's
	PanicTool    = "tool"    // a tool, hook or render run by the tool registry
)

// Panic counts a panic recovered at where (a Panic constant).
func (m *Metrics) Panic(where string) {
	if m != nil {
		m.panics.WithLabelValues(where).Inc()
	}
}

// GatewayStats are what a gateway reports at each scrape; a nil func is
// not reported.
type GatewayStats struct {
	Sessions, Connections, RequestsInFlight func() int
	// HeldAnswerBytes is the bytes of answers being written to clients
	// that have not read them yet (maxHeldAnswerBytes bounds them).
	HeldAnswerBytes func() int
}

// RegisterGateway reports the gateway instance id's gauges, read at each
// scrape (the request path pays nothing), until unregister is called.
func (m *Metrics) RegisterGateway(id string, st GatewayStats) (unregister func()) {
	if m == nil {
		return func() {}
	}
	labels := prometheus.Labels{"gateway": id}
	var cs []prometheus.Collector
	add := func(name, help string, f func() int) {
		if f != nil {
			cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
				func() float64 { return float64(f()) }))
		}
	}
	add("dsh_gateway_sessions", "MCP sessions the gateway serves.", st.Sessions)
	add("dsh_gateway_connections", "Open connections to the gateway's HTTP listener.", st.Connections)
	add("dsh_gateway_requests_in_flight", "MCP requests the gateway is serving.", st.RequestsInFlight)
	add("dsh_gateway_held_answer_bytes", "Bytes of answers the gateway's listener holds for clients that have not read them yet (bounded by maxHeldAnswerBytes).", st.HeldAnswerBytes)
	return m.registerAll(cs)
}

// registerAll registers cs, and returns what unregisters them. A
// collector already registered (an instance restarted under the same id
// before the old one was gone) replaces the old one.
func (m *Metrics) registerAll(cs []prometheus.Collector) (unregister func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
				m.reg.Unregister(are.ExistingCollector)
				_ = m.reg.Register(c)
			}
		}
	}
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, c := range cs {
			m.reg.Unregister(c)
		}
	}
}

// HostStats are what the host reports at each scrape.
type HostStats struct {
	// Reloads returns the counts of compositions applied, files that
	// failed to load, and file events without a change.
	Reloads func() (applied, failed, skipped int)
	// States returns how many entries are in each state.
	States func() map[string]int
}

// RegisterHost reports the host's reloads and instance states, read at each
// scrape, until unregister is called.
func (m *Metrics) RegisterHost(st HostStats) (unregister func()) {
	if m == nil {
		return func() {}
	}
	return m.registerAll([]prometheus.Collector{hostCollector{st: st,
		reloads: prometheus.NewDesc("dsh_reloads_total",
			"Composition loads by outcome: applied, failed (the file did not parse or validate; nothing changed), skipped (unchanged content).",
			[]string{"outcome"}, nil),
		instances: prometheus.NewDesc("dsh_instances", "Composition entries by state.", []string{"state"}, nil),
	}})
}

type hostCollector struct {
	st                 HostStats
	reloads, instances *prometheus.Desc
}

func (c hostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reloads
	ch <- c.instances
}

func (c hostCollector) Collect(ch chan<- prometheus.Metric) {
	if c.st.Reloads != nil {
		applied, failed, skipped := c.st.Reloads()
		ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(applied), "applied")
		ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(failed), "failed")
		ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(skipped), "skipped")
	}
	if c.st.States != nil {
		for state, n := range c.st.States() {
			ch <- prometheus.MustNewConstMetric(c.instances, prometheus.GaugeValue, float64(n), state)
		}
	}
}
