package policy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/internal/telemetry"
)

var decisionsDef = telemetry.Def{Name: "dsh_policy_decisions_total", Kind: telemetry.Counter,
	Help:   "The policy's decisions on tool calls, by action of the deciding rule (allow, ask, deny; pin for a held tool) and outcome (allowed, refused).",
	Labels: []string{"action", "outcome"}}

// MetricDefs are the metrics the policy counts (docs/operations.md).
var MetricDefs = []telemetry.Def{decisionsDef}

// decisions counts the policy's decisions; a nil *decisions counts
// nothing.
type decisions struct{ vec *prometheus.CounterVec }

func newDecisions(reg prometheus.Registerer) (*decisions, error) {
	vec, err := decisionsDef.Counter(reg)
	if err != nil {
		return nil, err
	}
	return &decisions{vec}, nil
}

// count counts a decision: action is the deciding rule's (allow, ask,
// deny, or pin for a changed definition), allowed whether the call went
// on.
func (d *decisions) count(action string, allowed bool) {
	if d == nil {
		return
	}
	outcome := "allowed"
	if !allowed {
		outcome = "refused"
	}
	d.vec.WithLabelValues(action, outcome).Inc()
}
