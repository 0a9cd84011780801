package host

import (
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// report is what one Update decided and how it ended, for the log: one
// line at info, and a line per decision with its reason at debug.
type report struct {
	started, restarted, disposed, retried []decision
	unchanged                             int
}

// decision is one instance an Update touched, and why.
type decision struct{ id, why string }

func (r *report) add(list *[]decision, id, why string) {
	for _, d := range *list {
		if d.id == id {
			return
		}
	}
	*list = append(*list, decision{id, why})
}

// log writes the report and returns the outcome of each entry it
// touched. The started, restarted and retried instances are listed by
// the state they settled in; kept ones (their new config failed, the
// previous one runs) apart.
func (r *report) log(h *Host) []Outcome {
	h.mu.Lock()
	state := make(map[string]State, len(h.order))
	kept := map[string]string{}
	notReady := map[string]string{}
	errs := map[string]string{}
	for _, in := range h.order {
		state[in.entry.ID] = in.state
		errs[in.entry.ID] = in.err
		if in.kept != "" {
			kept[in.entry.ID] = in.kept
		}
		if in.notReady != "" {
			notReady[in.entry.ID] = in.notReady
		}
	}
	h.mu.Unlock()

	outcome := map[State][]string{}
	var keptIDs []string
	var outcomes []Outcome
	for _, l := range []struct {
		what string
		list []decision
	}{{"started", r.started}, {"restarted", r.restarted}, {"started", r.retried}} {
		for _, d := range l.list {
			o := Outcome{ID: d.id, Result: l.what, Why: d.why}
			switch {
			case kept[d.id] != "":
				keptIDs = append(keptIDs, d.id)
				o.Result, o.Why = "kept", kept[d.id]
			case notReady[d.id] != "":
				outcome[StateFailed] = append(outcome[StateFailed], d.id)
				o.Result, o.Why = "failed", "not ready, still trying: "+notReady[d.id]
			default:
				outcome[state[d.id]] = append(outcome[state[d.id]], d.id)
				switch state[d.id] {
				case StateFailed:
					o.Result, o.Why = "failed", errs[d.id]
				case StatePending:
					o.Result, o.Why = "pending", errs[d.id]
				}
			}
			outcomes = append(outcomes, o)
		}
	}
	for _, d := range r.disposed {
		outcomes = append(outcomes, Outcome{ID: d.id, Result: "disposed", Why: d.why})
	}
	if !h.log.Enabled(h.base, slog.LevelInfo) {
		return outcomes
	}
	attrs := []any{}
	add := func(key string, ids []string) {
		if len(ids) > 0 {
			attrs = append(attrs, key, strings.Join(ids, ", "))
		}
	}
	ids := func(list []decision) []string {
		out := make([]string, len(list))
		for i, d := range list {
			out[i] = d.id
		}
		return out
	}
	add("started", ids(r.started))
	add("restarted", ids(r.restarted))
	add("retried", ids(r.retried))
	add("disposed", ids(r.disposed))
	add("failed", outcome[StateFailed])
	add("kept", keptIDs)
	add("pending", outcome[StatePending])
	attrs = append(attrs, "unchanged", r.unchanged)
	level := slog.LevelInfo
	if len(r.started)+len(r.restarted)+len(r.retried)+len(r.disposed) == 0 {
		level = slog.LevelDebug // nothing was touched: not news
	}
	h.log.Log(h.base, level, "composition reconciled", attrs...)

	for _, l := range []struct {
		what string
		list []decision
	}{{"started", r.started}, {"restarted", r.restarted}, {"retried", r.retried}} {
		for _, d := range l.list {
			h.log.Debug("instance "+l.what, "instance", d.id, "why", d.why, "state", state[d.id])
		}
	}
	for _, d := range r.disposed {
		h.log.Debug("instance disposed", "instance", d.id, "why", d.why)
	}
	return outcomes
}

// entryChange says what differs between two versions of an entry, naming
// config keys but never their values, which may be secrets.
func entryChange(old, new Entry) string {
	var parts []string
	if old.Name != new.Name {
		parts = append(parts, fmt.Sprintf("plugin %s replaced by %s", old.Name, new.Name))
	}
	if old.Disabled != new.Disabled {
		parts = append(parts, map[bool]string{true: "disabled", false: "enabled"}[new.Disabled])
	}
	if keys := changedKeys(old.Config, new.Config, ""); len(keys) > 0 {
		parts = append(parts, "config changed: "+strings.Join(keys, ", "))
	}
	if len(parts) == 0 {
		return "entry changed"
	}
	return strings.Join(parts, "; ")
}

// changedKeys lists the dotted keys whose values differ between a and b,
// descending into maps present on both sides.
func changedKeys(a, b map[string]any, prefix string) []string {
	var out []string
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		av, bv := a[k], b[k]
		if reflect.DeepEqual(av, bv) {
			continue
		}
		am, aok := av.(map[string]any)
		bm, bok := bv.(map[string]any)
		if aok && bok {
			out = append(out, changedKeys(am, bm, prefix+k+".")...)
			continue
		}
		out = append(out, prefix+k)
	}
	return out
}
