package policy

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestDecisionsAreCounted: each guard decision moves
// dsh_policy_decisions_total by the deciding rule's action and whether the
// call went on.
func TestDecisionsAreCounted(t *testing.T) {
	p, err := New(tools.New(nil), Config{Default: rules.Allow, Rules: []rules.Rule{{Tools: []string{"danger*"}, Action: rules.Deny}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if p.metrics, err = newDecisions(reg); err != nil {
		t.Fatal(err)
	}
	caller := tools.Caller{Kind: tools.CallerConsole}
	for _, name := range []string{"safe", "safe", "danger_zone"} {
		_ = p.Guard(context.Background(), tools.Call{Caller: caller, Name: name, Args: []byte(`{}`)})
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "dsh_policy_decisions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			got[key] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"action=allow outcome=allowed ": 2, "action=deny outcome=refused ": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}
