package mcpfold

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/settings"
)

// section is the settings section that holds the server ids and gates; the
// name is the original's, so an existing settings file carries over.
const section = "mcp-adapter"

// maxID is the largest server id.
const maxID = 99

// gateState is the persisted section: a stable id per server name, and the
// ids that are disabled. The zero value means nothing is mapped or disabled.
type gateState struct {
	ServerIDs map[string]int
	Disabled  []int
}

// disabled gives the disabled verdict, which needs positive evidence: the
// server has an id and that id is listed as disabled.
func (g *gateState) disabled(server string) bool {
	if g == nil {
		return false
	}
	id, ok := g.ServerIDs[server]
	return ok && slices.Contains(g.Disabled, id)
}

// disabledServers returns the names of the servers disabled now.
func (g *gateState) disabledServers() map[string]bool {
	out := map[string]bool{}
	for name := range g.ServerIDs {
		if g.disabled(name) {
			out[name] = true
		}
	}
	return out
}

// idOf returns the server's id, or 0.
func (g *gateState) idOf(server string) int {
	if g == nil {
		return 0
	}
	return g.ServerIDs[server]
}

// nameOf returns the server that carries id.
func (g *gateState) nameOf(id int) (string, bool) {
	for name, v := range g.ServerIDs {
		if v == id {
			return name, true
		}
	}
	return "", false
}

func (g *gateState) clone() gateState {
	out := gateState{ServerIDs: make(map[string]int, len(g.ServerIDs)), Disabled: slices.Clone(g.Disabled)}
	for k, v := range g.ServerIDs {
		out.ServerIDs[k] = v
	}
	return out
}

// allocate gives every name without an id the smallest free id. Mapped ids
// and disabled ids are all in use; ids are never recycled, so a name that
// left keeps its id. Names beyond the id space stay unassigned. It reports
// whether anything was added.
func (g *gateState) allocate(names []string) bool {
	used := make([]bool, maxID+1)
	for _, id := range g.ServerIDs {
		used[id] = true
	}
	for _, id := range g.Disabled {
		used[id] = true
	}
	next := 1
	added := false
	for _, name := range names {
		if _, ok := g.ServerIDs[name]; ok {
			continue
		}
		for next <= maxID && used[next] {
			next++
		}
		if next > maxID {
			break
		}
		if g.ServerIDs == nil {
			g.ServerIDs = map[string]int{}
		}
		g.ServerIDs[name] = next
		used[next] = true
		added = true
	}
	return added
}

// section returns the value written to the settings file.
func (g *gateState) section() map[string]any {
	ids := make(map[string]any, len(g.ServerIDs))
	for k, v := range g.ServerIDs {
		ids[k] = v
	}
	disabled := make([]any, len(g.Disabled))
	for i, v := range g.Disabled {
		disabled[i] = v
	}
	return map[string]any{"serverIds": ids, "disabled": disabled}
}

// normalize reads a stored section whatever shape it has: invalid entries
// are dropped, a duplicate id goes to the name serverIds lists first (order
// is that list, from the file; names it lacks come after it, by name), and
// disabled is deduplicated in order. It returns what it dropped, for one
// warning.
func normalize(raw any, order []string) (g gateState, problems []string) {
	g.ServerIDs = map[string]int{}
	if raw == nil {
		return g, nil
	}
	m, ok := asMap(raw)
	if !ok {
		return g, []string{fmt.Sprintf("the section is a %T, not a mapping", raw)}
	}
	for k := range m {
		if k != "serverIds" && k != "disabled" {
			problems = append(problems, fmt.Sprintf("unknown key %q", k))
		}
	}
	if v, present := m["serverIds"]; present && v != nil {
		ids, ok := asMap(v)
		if !ok {
			problems = append(problems, "serverIds is not a mapping")
		}
		names := make([]string, 0, len(ids))
		for name := range ids {
			names = append(names, name)
		}
		pos := make(map[string]int, len(order))
		for i, name := range order {
			if _, dup := pos[name]; !dup {
				pos[name] = i
			}
		}
		rank := func(name string) int {
			if i, ok := pos[name]; ok {
				return i
			}
			return len(order)
		}
		sort.Slice(names, func(i, j int) bool {
			if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
				return ri < rj
			}
			return names[i] < names[j]
		})
		taken := map[int]string{}
		for _, name := range names {
			id, ok := asID(ids[name])
			switch {
			case name == "":
				problems = append(problems, "serverIds has an empty server name")
			case !ok:
				problems = append(problems, fmt.Sprintf("serverIds.%s: %v is not an id in 1..%d", name, ids[name], maxID))
			case taken[id] != "":
				problems = append(problems, fmt.Sprintf("serverIds.%s: id %d already belongs to %q", name, id, taken[id]))
			default:
				taken[id] = name
				g.ServerIDs[name] = id
			}
		}
	}
	if v, present := m["disabled"]; present && v != nil {
		list, ok := v.([]any)
		if !ok {
			problems = append(problems, "disabled is not a list")
		}
		for _, x := range list {
			id, ok := asID(x)
			if !ok {
				problems = append(problems, fmt.Sprintf("disabled: %v is not an id in 1..%d", x, maxID))
				continue
			}
			if !slices.Contains(g.Disabled, id) {
				g.Disabled = append(g.Disabled, id)
			}
		}
	}
	return g, problems
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			s, ok := k.(string)
			if !ok {
				s = fmt.Sprint(k)
			}
			out[s] = x
		}
		return out, true
	}
	return nil, false
}

// asID accepts an integer in 1..99 in any numeric representation a YAML or
// JSON decoder produces.
func asID(v any) (int, bool) {
	var f float64
	switch n := v.(type) {
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case int32:
		f = float64(n)
	case uint64:
		f = float64(n)
	case uint:
		f = float64(n)
	case float64:
		f = n
	case float32:
		f = float64(n)
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < 1 || f > maxID {
		return 0, false
	}
	return int(f), true
}

// gateStore persists the gate state. The adapter works without one (nothing
// is disabled and the toggles refuse); production uses the settings service.
type gateStore interface {
	// load returns the stored state, normalized.
	load() (gateState, []string, error)
	// update applies fn to the freshly read state and writes the result
	// when fn reports a change. It returns the state after fn.
	update(fn func(g *gateState) (changed bool, err error)) (gateState, error)
	// watch calls fn whenever the stored state changes outside the
	// adapter, until s is disposed.
	watch(s *host.Scope, fn func(g gateState, problems []string, err error))
}

// storedSection is the section as the settings file holds it: the decoded
// value, and the names of serverIds in the order the file lists them, which
// a decoded map loses and normalize needs to let the first of two names
// with one id keep it.
type storedSection struct {
	raw   any
	order []string
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *storedSection) UnmarshalYAML(n *yaml.Node) error {
	if err := n.Decode(&s.raw); err != nil {
		return err
	}
	s.order = nil
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if ids := n.Content[i+1]; n.Content[i].Value == "serverIds" && ids.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(ids.Content); j += 2 {
				s.order = append(s.order, ids.Content[j].Value)
			}
		}
	}
	return nil
}

func (s storedSection) normalize() (gateState, []string) { return normalize(s.raw, s.order) }

// settingsGate is the gateStore on the settings service.
type settingsGate struct{ st *settings.Store }

func (sg settingsGate) load() (gateState, []string, error) {
	v, ok, err := settings.Read[storedSection](sg.st, section)
	if err != nil {
		return gateState{}, nil, err
	}
	if !ok {
		return gateState{ServerIDs: map[string]int{}}, nil, nil
	}
	g, problems := v.normalize()
	return g, problems, nil
}

// errUnchanged aborts a settings update that has nothing to write.
var errUnchanged = errors.New("unchanged")

func (sg settingsGate) update(fn func(g *gateState) (bool, error)) (gateState, error) {
	var out gateState
	err := settings.Update[any](sg.st, section, func(v *any) error {
		// The file as Update read it, under the lock, for the order of
		// serverIds that *v, a decoded map, lacks.
		stored, _, err := settings.Read[storedSection](sg.st, section)
		if err != nil {
			return err
		}
		g, _ := normalize(*v, stored.order)
		changed, err := fn(&g)
		out = g
		if err != nil {
			return err
		}
		if !changed {
			return errUnchanged
		}
		*v = g.section()
		return nil
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	return out, err
}

func (sg settingsGate) watch(s *host.Scope, fn func(gateState, []string, error)) {
	settings.Watch[storedSection](sg.st, s, section, func(v storedSection, err error) {
		if err != nil {
			fn(gateState{}, nil, err)
			return
		}
		g, problems := v.normalize()
		fn(g, problems, nil)
	})
}
