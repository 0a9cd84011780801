package tools

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A tool's series go when the tool does: a server's tools/list_changed
// dropping it, or a reload removing its server (whose every series go).
// Not at once: an MCP server's list change unregisters all its tools and
// registers the new list, and a tool in both lists must keep its counts.
// So a tool that left is noted (left), a tool registered again is struck
// off (back), and the scrape deletes what left more than forgetAfter ago
// and did not come back (sweep).
const forgetAfter = time.Second

// leftTool is a tool (or a server, tool "") that left the registry.
type leftTool struct {
	since  time.Time
	series *toolSeries // the tool's cached series, if it was called
}

// left notes that server's tool left the registry, and when serverGone,
// that it was the server's last. Only a tool with series of its own is
// noted (called, and labelled by its name), so that a server renaming its
// tools over and over grows nothing the series do not.
func (m *Metrics) left(server, tool string, serverGone bool, s *toolSeries) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	k := serverTool{server, tool}
	if m.called[k] {
		m.gone[k] = leftTool{since: now, series: s}
	}
	// The tools of no server share server="" with the unknown tool's
	// series, which stays.
	if serverGone && server != "" {
		m.gone[serverTool{server, ""}] = leftTool{since: now}
	}
}

// back strikes server's tool, registered (again), off the tools that left.
func (m *Metrics) back(server, tool string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.gone) == 0 {
		return
	}
	delete(m.gone, serverTool{server, tool})
	delete(m.gone, serverTool{server, ""})
}

// sweep deletes the series of the tools and servers that left more than
// forgetAfter ago, freeing their places under a limit; a call of theirs
// still in flight records nothing.
func (m *Metrics) sweep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.gone) == 0 {
		return
	}
	now := m.now()
	for k, l := range m.gone {
		if now.Sub(l.since) < forgetAfter {
			continue
		}
		delete(m.gone, k)
		if l.series != nil {
			l.series.gone.Store(true)
		}
		if k.tool == "" {
			m.deleteLocked(prometheus.Labels{"server": k.server})
			// The server's tools' cached series are stale now: a call
			// in flight must not make a deleted series anew.
			m.gen.Add(1)
			for n := range m.called {
				if n.server == k.server {
					delete(m.called, n)
					delete(m.named, n)
				}
			}
			continue
		}
		delete(m.called, k)
		delete(m.named, k)
		m.deleteLocked(prometheus.Labels{"server": k.server, "tool": k.tool})
	}
}

func (m *Metrics) deleteLocked(l prometheus.Labels) {
	m.calls.DeletePartialMatch(l)
	m.errors.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
}

// forgetting is one of the registry's metric vectors, registered so that
// a scrape sweeps the tools that left before it gathers.
type forgetting struct {
	m *Metrics
	prometheus.Collector
}

func (f forgetting) Collect(ch chan<- prometheus.Metric) {
	f.m.sweep()
	f.Collector.Collect(ch)
}
