package hosttest_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/services/tools"
)

type meterConfig struct {
	N    float64 `yaml:"n"`
	Kind string  `yaml:"kind"`
	Hold bool    `yaml:"hold"`
}

// meterHold, when set, holds a starting meter's readiness: the run says
// it started, then waits to be released.
type meterHoldChans struct{ started, release chan struct{} }

var meterHold atomic.Pointer[meterHoldChans]

func init() {
	host.Register(host.Definition[meterConfig]{
		Name:         "hosttest-meter",
		Inject:       []host.Dep{host.Require(tools.Key)},
		ReportsReady: true,
		Overlap:      true,
		Apply: func(s *host.Scope, cfg meterConfig) error {
			hits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_meter_total", Help: "Hits."}, []string{"kind"})
			conf := prometheus.NewGauge(prometheus.GaugeOpts{Name: "test_meter_config", Help: "The run's n."})
			lat := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "test_meter_seconds", Help: "Latency.", Buckets: []float64{1, 10}})
			reg := s.Registerer()
			for _, c := range []prometheus.Collector{hits, conf, lat} {
				if err := reg.Register(c); err != nil {
					return err
				}
			}
			hits.WithLabelValues("both").Add(cfg.N)
			hits.WithLabelValues(cfg.Kind).Inc()
			conf.Set(cfg.N)
			lat.Observe(cfg.N)
			if _, err := host.Get(s, tools.Key).Register(s, tools.Func(s.ID()+"_hit", "Count a hit.",
				func(context.Context, struct{}) (any, error) { hits.WithLabelValues("both").Inc(); return "ok", nil })); err != nil {
				return err
			}
			if hold := meterHold.Load(); cfg.Hold && hold != nil {
				s.Go("hold", func(ctx context.Context) {
					close(hold.started)
					select {
					case <-hold.release:
						s.Ready()
					case <-ctx.Done():
					}
				})
				return nil
			}
			s.Ready()
			return nil
		},
	})
}

// meterSeries gathers the host's metrics, failing the test on an error,
// and returns the test_meter series as name{labels}=value.
func meterSeries(t *testing.T, h *hosttest.Host) []string {
	t.Helper()
	fams, err := h.Gatherer().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []string
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "test_meter") {
			continue
		}
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Histogram != nil:
				v = float64(m.GetHistogram().GetSampleCount())
				ls = append(ls, fmt.Sprintf("sum=%g", m.GetHistogram().GetSampleSum()))
			}
			out = append(out, fmt.Sprintf("%s{%s}=%g", f.GetName(), strings.Join(ls, ","), v))
		}
	}
	sort.Strings(out)
	return out
}

// waitSeries waits, at most hosttest.WaitTimeout, until cond holds for the
// test_meter series.
func waitSeries(t *testing.T, h *hosttest.Host, cond func([]string) bool) {
	t.Helper()
	deadline := time.Now().Add(hosttest.WaitTimeout)
	for got := meterSeries(t, h); !cond(got); got = meterSeries(t, h) {
		if time.Now().After(deadline) {
			t.Fatalf("the series never got there: %v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunMetricsAcrossReload: two runs of one overlapping entry register
// the same metrics with no duplicate-registration error and both count
// while they overlap; an entry's counter and histogram go on across the
// reload as one series (the old run's counts carried), a gauge is the
// newest run's, a series only the old run had goes with it, and a removed
// entry's series are gone (an entry of that id added again counts from 0).
func TestRunMetricsAcrossReload(t *testing.T) {
	h := hosttest.Start(t, "plugins:\n  - {id: m, name: hosttest-meter, config: {n: 1, kind: a}}\n")
	if st := host.Find(h.Status(), "m"); st.State != host.StateActive {
		t.Fatalf("m: %+v", st)
	}
	h.Call("m_hit", "{}")
	h.Call("m_hit", "{}")
	want := []string{
		"test_meter_config{entry=m}=1",
		"test_meter_seconds{entry=m,sum=1}=1",
		"test_meter_total{entry=m,kind=a}=1",
		"test_meter_total{entry=m,kind=both}=3",
	}
	if diff := cmp.Diff(want, meterSeries(t, h)); diff != "" {
		t.Fatalf("one run (-want +got):\n%s", diff)
	}

	hold := &meterHoldChans{started: make(chan struct{}), release: make(chan struct{})}
	meterHold.Store(hold)
	t.Cleanup(func() { meterHold.Store(nil) })
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		h.Apply("plugins:\n  - {id: m, name: hosttest-meter, config: {n: 10, kind: b, hold: true}}\n")
	}()
	<-hold.started
	h.Call("m_hit", "{}") // the old run still serves
	want = []string{
		"test_meter_config{entry=m}=10",
		"test_meter_seconds{entry=m,sum=11}=2",
		"test_meter_total{entry=m,kind=a}=1",
		"test_meter_total{entry=m,kind=both}=14",
		"test_meter_total{entry=m,kind=b}=1",
	}
	if diff := cmp.Diff(want, meterSeries(t, h)); diff != "" {
		t.Errorf("two runs overlapping (-want +got):\n%s", diff)
	}
	close(hold.release)
	<-applied
	if st := host.Find(h.Status(), "m"); st.State != host.StateActive || st.Err != "" {
		t.Fatalf("m after the reload: %+v", st)
	}
	// The old run is disposed once its calls ended, after the swap.
	waitSeries(t, h, func(got []string) bool { return !slices.Contains(got, "test_meter_total{entry=m,kind=a}=1") })
	h.Call("m_hit", "{}")
	want = []string{
		"test_meter_config{entry=m}=10",
		"test_meter_seconds{entry=m,sum=11}=2",
		"test_meter_total{entry=m,kind=both}=15",
		"test_meter_total{entry=m,kind=b}=1",
	}
	if diff := cmp.Diff(want, meterSeries(t, h)); diff != "" {
		t.Errorf("after the old run's dispose (-want +got):\n%s", diff)
	}

	h.Apply("plugins: []\n")
	if got := meterSeries(t, h); len(got) != 0 {
		t.Errorf("after the entry's removal: %v, want no series", got)
	}
	h.Apply("plugins:\n  - {id: m, name: hosttest-meter, config: {n: 2, kind: a}}\n")
	want = []string{
		"test_meter_config{entry=m}=2",
		"test_meter_seconds{entry=m,sum=2}=1",
		"test_meter_total{entry=m,kind=a}=1",
		"test_meter_total{entry=m,kind=both}=2",
	}
	if diff := cmp.Diff(want, meterSeries(t, h)); diff != "" {
		t.Errorf("the entry added again (-want +got):\n%s", diff)
	}
}
