package host

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The host hands each run of an instance its telemetry, as Alloy hands its
// components theirs: a Prometheus registerer whose series carry the label
// entry (the composition id; "instance" is Prometheus's own, for the
// scraped target) and a tracer. Every run registers into a registry of its
// own, so that two runs of one entry that overlap during a reload never
// collide; the host's Gatherer merges them:
//
//   - a counter or histogram series is the sum over the entry's live runs
//     plus what its disposed runs had counted: an entry's total goes on
//     across reloads as one series, as if one process counted it. What a
//     disposed run counted shows only in series a live run of the entry
//     also has, so a series only the old run had goes with it;
//   - any other series (a gauge) is the newest live run's: the run being
//     replaced no longer speaks for the entry;
//   - a run's series are gone once it is disposed, and an entry's carried
//     totals once it left the composition.

// InstrumentationName names the tracer of every span a scope's Tracer
// starts (the module's path).
const InstrumentationName = "github.com/dsh-host/dsh-host"

// EntryLabel is the label every series of a run carries: its entry's id.
const EntryLabel = "entry"

// runTelemetry is the host's process registry and tracer, and the runs'
// registries by entry.
type runTelemetry struct {
	reg    *prometheus.Registry
	tracer trace.TracerProvider // nil: tracing off
	live   func(id string) bool // whether id is in the composition

	mu      sync.Mutex
	entries map[string]*entryMetrics
}

// entryMetrics are the runs of one entry and what its disposed runs
// counted.
type entryMetrics struct {
	runs []*runMetrics // live runs, oldest first
	// carried are the counters and histograms of disposed runs, by
	// family name and series.
	carried map[seriesKey]*dto.Metric
}

type seriesKey struct{ family, labels string }

// runMetrics is one run's registry.
type runMetrics struct {
	reg *prometheus.Registry
}

func newTelemetry(reg *prometheus.Registry, tp trace.TracerProvider, live func(string) bool) *runTelemetry {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if _, isNoop := tp.(noop.TracerProvider); isNoop {
		tp = nil
	}
	return &runTelemetry{reg: reg, tracer: tp, live: live, entries: map[string]*entryMetrics{}}
}

// Gatherer returns what serves the process's metrics (at /metrics): the
// registry of Options.Metrics and every live run's series, merged as the
// package doc of metrics.go says.
func (h *Host) Gatherer() prometheus.Gatherer { return h.tel }

// Registry returns the process's registry (Options.Metrics, or the one
// the host made), where the host's own metrics are and process-wide
// collectors go. A plugin registers on its Scope's Registerer instead.
func (h *Host) Registry() *prometheus.Registry { return h.tel.reg }

// Registerer returns the registerer of this run of the instance: its
// series carry the label entry and are unregistered when the run is
// disposed; another run of the entry may register the same metrics
// (Host.Gatherer merges them). A run registers its metrics once, in apply.
// On a scope made by NewScope it is a registry of the scope's own, which
// Gatherer serves.
func (s *Scope) Registerer() prometheus.Registerer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.metrics == nil {
		s.metrics = &runMetrics{reg: prometheus.NewRegistry()}
		// A run disposed already counts into a registry nobody gathers.
		if s.inst != nil && !s.disposed {
			s.inst.host.tel.add(s.id, s.metrics)
		}
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{EntryLabel: s.id}, s.metrics.reg)
}

// Gatherer returns the process's metrics, for the plugin that serves them:
// the host's Gatherer, or on a scope made by NewScope its own registry.
func (s *Scope) Gatherer() prometheus.Gatherer {
	if s.inst != nil {
		return s.inst.host.tel
	}
	s.Registerer()
	return s.metrics.reg
}

// Tracer returns the tracer of the instance's spans, nil when tracing is
// off (Options.Tracing unset or a no-op): a caller then skips its spans
// altogether, which is what makes "off" free. Its instrumentation scope
// carries the entry's id.
func (s *Scope) Tracer() trace.Tracer {
	if s.inst == nil || s.inst.host.tel.tracer == nil {
		return s.tracer
	}
	return s.inst.host.tel.tracer.Tracer(InstrumentationName,
		trace.WithInstrumentationAttributes(attribute.String("dsh.entry", s.id)))
}

// SetTracer sets the tracer of a scope made by NewScope (a test's, or a
// tool running plugin parts without a host); a host's scopes take the
// host's.
func (s *Scope) SetTracer(t trace.Tracer) { s.tracer = t }

// retireMetrics folds the run's counters into its entry's carried totals
// and stops gathering it; Dispose calls it once the disposers ran.
func (s *Scope) retireMetrics() {
	s.mu.Lock()
	run := s.metrics
	s.mu.Unlock()
	if run != nil && s.inst != nil {
		s.inst.host.tel.retire(s.id, run)
	}
}

func (t *runTelemetry) add(id string, run *runMetrics) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[id]
	if e == nil {
		e = &entryMetrics{carried: map[seriesKey]*dto.Metric{}}
		t.entries[id] = e
	}
	e.runs = append(e.runs, run)
}

func (t *runTelemetry) retire(id string, run *runMetrics) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Under t.mu, so that a Gather sees its counts live or carried.
	fams, _ := run.reg.Gather()
	e := t.entries[id]
	if e == nil {
		return
	}
	i := slices.Index(e.runs, run)
	if i < 0 {
		return
	}
	e.runs = slices.Delete(e.runs, i, i+1)
	for _, f := range fams {
		if f.GetType() != dto.MetricType_COUNTER && f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.GetMetric() {
			k := seriesKey{f.GetName(), labelKey(m)}
			if c := e.carried[k]; c != nil {
				addInto(f.GetType(), c, m)
			} else {
				e.carried[k] = m
			}
		}
	}
}

// Gather returns the process registry's families and every entry's,
// merged; an error of one run's collector is returned beside what the
// others gathered (promhttp serves what it can).
func (t *runTelemetry) Gather() ([]*dto.MetricFamily, error) {
	fams, err := t.reg.Gather()
	errs := []error{err}
	byName := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	// Under t.mu throughout, so that a run retiring meanwhile is counted
	// once: live or carried, never both.
	t.mu.Lock()
	ids := make([]string, 0, len(t.entries))
	var idle []string
	for id, e := range t.entries {
		if len(e.runs) == 0 {
			idle = append(idle, id)
		} else {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := t.entries[id]
		// The entry's series, merged over its runs oldest first: a later
		// run's gauge replaces an earlier one's.
		merged := map[string]*dto.MetricFamily{}
		type slot struct {
			mf *dto.MetricFamily
			i  int
		}
		index := map[seriesKey]slot{}
		for _, run := range e.runs {
			rf, err := run.reg.Gather()
			errs = append(errs, err)
			for _, f := range rf {
				mf := merged[f.GetName()]
				if mf == nil {
					mf = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type, Unit: f.Unit}
					merged[f.GetName()] = mf
				} else if mf.GetType() != f.GetType() {
					errs = append(errs, fmt.Errorf("entry %s: two runs declare %s as %s and %s", id, f.GetName(), mf.GetType(), f.GetType()))
					continue
				}
				for _, m := range f.GetMetric() {
					k := seriesKey{f.GetName(), labelKey(m)}
					switch have, ok := index[k]; {
					case !ok:
						index[k] = slot{mf, len(mf.Metric)}
						mf.Metric = append(mf.Metric, m)
					case f.GetType() == dto.MetricType_COUNTER || f.GetType() == dto.MetricType_HISTOGRAM:
						addInto(f.GetType(), have.mf.Metric[have.i], m)
					default:
						have.mf.Metric[have.i] = m
					}
				}
			}
		}
		for k, c := range e.carried {
			if have, ok := index[k]; ok {
				addInto(have.mf.GetType(), have.mf.Metric[have.i], c)
			}
		}
		for name, mf := range merged {
			have := byName[name]
			switch {
			case have == nil:
				byName[name] = mf
			case have.GetType() != mf.GetType():
				errs = append(errs, fmt.Errorf("%s is declared as %s and %s (entry %s)", name, have.GetType(), mf.GetType(), id))
			default:
				have.Metric = append(have.Metric, mf.Metric...)
			}
		}
	}
	t.mu.Unlock()
	t.prune(idle)
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		sort.Slice(f.Metric, func(i, j int) bool { return labelKey(f.Metric[i]) < labelKey(f.Metric[j]) })
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return out, errors.Join(errs...)
}

// prune forgets the carried totals of entries with no live run that left
// the composition.
func (t *runTelemetry) prune(idle []string) {
	var gone []string
	for _, id := range idle {
		if !t.live(id) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, id := range gone {
		t.forget(id)
	}
}

// forget drops the carried totals of id, which left the composition,
// unless a run of it still lives (a dispose that timed out).
func (t *runTelemetry) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[id]; e != nil && len(e.runs) == 0 {
		delete(t.entries, id)
	}
}

// labelKey identifies a series in its family: its labels, which the
// registry gives sorted by name.
func labelKey(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		b.WriteString(l.GetName())
		b.WriteByte('=')
		b.WriteString(l.GetValue())
		b.WriteByte(0xff)
	}
	return b.String()
}

// addInto adds m's counts to into (a counter's value, a histogram's
// count, sum and buckets by upper bound); m is left as it is.
func addInto(typ dto.MetricType, into, m *dto.Metric) {
	switch typ {
	case dto.MetricType_COUNTER:
		v := into.GetCounter().GetValue() + m.GetCounter().GetValue()
		into.Counter = &dto.Counter{Value: &v, CreatedTimestamp: into.GetCounter().GetCreatedTimestamp()}
	case dto.MetricType_HISTOGRAM:
		h, o := into.GetHistogram(), m.GetHistogram()
		n, sum := h.GetSampleCount()+o.GetSampleCount(), h.GetSampleSum()+o.GetSampleSum()
		buckets := make([]*dto.Bucket, len(h.GetBucket()))
		for i, b := range h.GetBucket() {
			c := b.GetCumulativeCount()
			for _, ob := range o.GetBucket() {
				if ob.GetUpperBound() == b.GetUpperBound() {
					c += ob.GetCumulativeCount()
					break
				}
			}
			buckets[i] = &dto.Bucket{UpperBound: b.UpperBound, CumulativeCount: &c}
		}
		into.Histogram = &dto.Histogram{SampleCount: &n, SampleSum: &sum, Bucket: buckets, CreatedTimestamp: h.GetCreatedTimestamp()}
	}
}
