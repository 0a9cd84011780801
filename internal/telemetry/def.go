package telemetry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Kind is a metric's Prometheus type.
type Kind string

// The kinds of metric a Def declares.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
)

// Def declares one metric, beside the code that counts it: its name, help,
// kind and labels are what the package registers and what
// docs/operations.md lists (generated from every package's Defs by
// TestMetricTable). A run registers it on its scope's Registerer, which
// adds the label entry; a Def with Process set is the process's, on the
// host's registry, with no entry label.
type Def struct {
	Name, Help string
	Kind       Kind
	Labels     []string  // besides entry
	Buckets    []float64 // a histogram's
	Process    bool
}

// Counter registers d, a counter, on reg.
func (d Def) Counter(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := d.NewCounter()
	return c, register(reg, c, d.Name)
}

// NewCounter returns d, a counter, unregistered: for a collector of its
// own that gathers it.
func (d Def) NewCounter() *prometheus.CounterVec {
	d.must(Counter)
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
}

// Gauge registers d, a gauge, on reg.
func (d Def) Gauge(reg prometheus.Registerer) (*prometheus.GaugeVec, error) {
	d.must(Gauge)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)
	return g, register(reg, g, d.Name)
}

// GaugeFunc registers d, a gauge whose labels take values, read from f at
// each scrape (the counted path pays nothing).
func (d Def) GaugeFunc(reg prometheus.Registerer, f func() float64, values ...string) error {
	d.must(Gauge)
	if len(values) != len(d.Labels) {
		panic(fmt.Sprintf("telemetry: %s has labels %v, given %d values", d.Name, d.Labels, len(values)))
	}
	labels := prometheus.Labels{}
	for i, l := range d.Labels {
		labels[l] = values[i]
	}
	return register(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: d.Name, Help: d.Help, ConstLabels: labels}, f), d.Name)
}

// Histogram registers d, a histogram, on reg.
func (d Def) Histogram(reg prometheus.Registerer) (*prometheus.HistogramVec, error) {
	h := d.NewHistogram()
	return h, register(reg, h, d.Name)
}

// NewHistogram returns d, a histogram, unregistered (NewCounter).
func (d Def) NewHistogram() *prometheus.HistogramVec {
	d.must(Histogram)
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.Name, Help: d.Help, Buckets: d.Buckets}, d.Labels)
}

// Register registers c, a collector of d's metrics, on reg.
func (d Def) Register(reg prometheus.Registerer, c prometheus.Collector) error {
	return register(reg, c, d.Name)
}

// Desc is d's descriptor, for a collector of its own.
func (d Def) Desc() *prometheus.Desc { return prometheus.NewDesc(d.Name, d.Help, d.Labels, nil) }

// must panics when d is used as another kind: a declaration's mistake
// the first test of its package shows.
func (d Def) must(k Kind) {
	if d.Kind != k {
		panic(fmt.Sprintf("telemetry: %s is declared a %s, registered as a %s", d.Name, d.Kind, k))
	}
}

func register(reg prometheus.Registerer, c prometheus.Collector, name string) error {
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("metric %s: %w", name, err)
	}
	return nil
}

// Table returns defs as the markdown table docs/operations.md shows, by
// name.
func Table(defs []Def) string {
	defs = slices.Clone(defs)
	slices.SortFunc(defs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString("| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n")
	for _, d := range defs {
		labels := slices.Clone(d.Labels)
		if !d.Process {
			labels = append([]string{"entry"}, labels...)
		}
		ls := "—"
		if len(labels) > 0 {
			ls = "`" + strings.Join(labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Kind, ls, strings.ReplaceAll(d.Help, "|", `\|`))
	}
	return b.String()
}
