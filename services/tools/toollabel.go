package tools

import (
	"fmt"

	"github.com/dsh-host/dsh-host/host"
)

// ToolLabel bounds the tool label of the registry's metrics: every tool
// costs a histogram's series set per outcome, so a host serving thousands
// of tools would otherwise scrape hundreds of thousands of lines. The
// zero value labels every tool by its name.
type ToolLabel struct {
	// None labels the calls by server only: the tool label is empty
	// (absent from the scrape).
	None bool
	// Limit, when above 0, gives at most Limit tools their own label
	// value, in the order they are first called; the calls of the others
	// are counted under tool="other" of their server. A tool that goes
	// frees its place.
	Limit int
}

// OtherTool is the tool label of the tools past ToolLabel.Limit.
const OtherTool = "other"

// String says l as the metrics entry's keys do.
func (l ToolLabel) String() string {
	switch {
	case l.None:
		return "toolLabel: none"
	case l.Limit > 0:
		return fmt.Sprintf("toolLabelLimit: %d", l.Limit)
	}
	return "toolLabel: name"
}

// LabelTools sets the tool label's policy of r's metrics until s is
// disposed (then every tool is labelled by its name again): the metrics
// entry's. The tool series counted so far are deleted, as they were
// labelled under the policy before: the counts start again from zero. A
// second policy while one is set is an error naming its holder; a
// registry without metrics takes any and counts nothing.
func (r *Registry) LabelTools(s *host.Scope, l ToolLabel) error {
	mustScope(s, "LabelTools")
	m := r.metrics
	if m == nil {
		return nil
	}
	if err := m.setLabel(s, s.ID(), l); err != nil {
		return err
	}
	s.OnDispose("tool label policy", func() error { return m.setLabel(nil, "", ToolLabel{}) })
	return nil
}

// setLabel makes l the policy, owned by owner (nil: the default, which
// any owner replaces), and deletes the tool series.
func (m *Metrics) setLabel(owner *host.Scope, id string, l ToolLabel) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if owner != nil && m.owner != nil && m.owner != owner {
		return fmt.Errorf("the tool label of the metrics is bounded by entry %s already (%s); keep one metrics entry", m.ownerID, m.label)
	}
	m.owner, m.ownerID, m.label = owner, id, l
	clear(m.named)
	clear(m.called)
	clear(m.gone)
	m.calls.Reset()
	m.errors.Reset()
	m.duration.Reset()
	m.gen.Add(1)
	return nil
}

// labelLocked returns the tool label's value for server's tool under the
// policy, taking a place under a limit if one is free.
func (m *Metrics) labelLocked(server, tool string) string {
	switch {
	case tool == UnknownTool:
		// One series whatever the policy: the names callers make up
		// are never labels.
		return tool
	case m.label.None:
		return ""
	case m.label.Limit > 0:
		k := serverTool{server, tool}
		if m.named[k] {
			return tool
		}
		if len(m.named) >= m.label.Limit {
			return OtherTool
		}
		m.named[k] = true
	}
	return tool
}
