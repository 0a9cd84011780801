package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// The host's own metrics, read from its state at each scrape (reloading
// pays nothing for them). They are the process's, so they carry no entry
// label.
var (
	reloadsDef = telemetry.Def{Name: "dsh_reloads_total", Kind: telemetry.Counter, Process: true,
		Help:   "Composition loads by outcome: applied, failed (the file did not parse or validate; nothing changed), skipped (unchanged content).",
		Labels: []string{"outcome"}}
	instancesDef = telemetry.Def{Name: "dsh_instances", Kind: telemetry.Gauge, Process: true,
		Help:   "Composition entries by state (active, failed, pending, disabled, starting).",
		Labels: []string{"state"}}
)

// MetricDefs are the host's metrics (docs/operations.md).
var MetricDefs = []telemetry.Def{reloadsDef, instancesDef}

// hostCollector reports dsh_reloads_total and dsh_instances.
type hostCollector struct {
	h                  *Host
	reloads, instances *prometheus.Desc
}

func newHostCollector(h *Host) hostCollector {
	return hostCollector{h: h, reloads: reloadsDef.Desc(), instances: instancesDef.Desc()}
}

func (c hostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reloads
	ch <- c.instances
}

func (c hostCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.h.Reloads()
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(r.Applied), "applied")
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(r.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(r.Skipped), "skipped")
	n := map[State]int{}
	for _, st := range c.h.Status() {
		n[st.State]++
	}
	for state, k := range n {
		ch <- prometheus.MustNewConstMetric(c.instances, prometheus.GaugeValue, float64(k), string(state))
	}
}

// inComposition reports whether id is an entry of the composition.
func (h *Host) inComposition(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byID[id] != nil
}
