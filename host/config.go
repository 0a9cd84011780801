package host

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/dsh-host/dsh-host/internal/yamlfield"
	yamlv3 "go.yaml.in/yaml/v3"
)

// planned is one entry of a validated composition: its plugin and its
// decoded config (a pointer to the plugin's config type).
type planned struct {
	entry   Entry
	plugin  *plugin
	cfg     any
	secrets []string // the variables cfg names as secret (Definition.Secrets)
	claims  []Claim  // cfg's claims (Definition.Claims)
	lazy    bool     // cfg starts on its first use (Definition.Lazy)
}

// Check validates c without starting anything: unique ids, known plugin
// names, every entry's config decoded strictly and validated, no service
// cycles. It returns every problem, each naming file:line and entry id.
func Check(c *Composition) error {
	_, err := plan(c, nil)
	return err
}

// plan validates c and returns its entries in order, with an entry for every
// built-in plugin c does not list put first (they provide the services the
// others inject), and then each of extra whose id c does not list.
func plan(c *Composition, extra []Entry) ([]*planned, error) {
	if c == nil {
		c = &Composition{}
	}
	var errs []error
	var out []*planned
	listed := map[string]int{}
	for _, e := range c.Entries {
		if line, dup := listed[e.ID]; dup {
			errs = append(errs, fmt.Errorf("%s: duplicate id (first at line %d); ids must be unique", e.where(e.Line), line))
			continue
		}
		listed[e.ID] = e.Line
	}
	// extra fills in ids c does not list; one with a built-in's id
	// configures it, as an entry of c would.
	var added []Entry
	takenByExtra := map[string]bool{}
	for _, e := range extra {
		if _, ok := listed[e.ID]; ok {
			continue
		}
		if takenByExtra[e.ID] {
			errs = append(errs, fmt.Errorf("%s: duplicate id among the host's own entries; ids must be unique", e.where(e.Line)))
			continue
		}
		takenByExtra[e.ID] = true
		added = append(added, e)
	}
	for _, p := range registeredPlugins() {
		if _, ok := listed[p.name]; p.builtin && !ok && !takenByExtra[p.name] {
			out = append(out, &planned{entry: Entry{ID: p.name, Name: p.name, File: builtinFile}})
		}
	}
	seen := map[string]bool{}
	for _, e := range c.Entries {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		if e.ID == "" {
			errs = append(errs, fmt.Errorf("%s: has no id; give every entry a unique id", e.where(e.Line)))
			continue
		}
		out = append(out, &planned{entry: e})
	}
	for _, e := range added {
		out = append(out, &planned{entry: e})
	}
	for _, pl := range out {
		e := &pl.entry
		p, ok := lookupPlugin(e.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown plugin %q (registered: %s)", e.where(e.Line), e.Name, strings.Join(pluginNames(), ", ")))
			continue
		}
		if b, ok := lookupPlugin(e.ID); ok && b.builtin && b != p {
			// The built-in would not start (its id is taken) and the
			// services it provides would be missing.
			errs = append(errs, fmt.Errorf("%s: the id is the built-in %s service's, and an entry with it configures that service (name: %s); give this entry another id", e.where(e.Line), e.ID, e.ID))
			continue
		}
		pl.plugin = p
		cfg, cerrs := decodeConfig(p, e)
		errs = append(errs, cerrs...)
		pl.cfg = cfg
		if cfg == nil {
			continue
		}
		// A disabled entry's claims and laziness are for its status; its
		// plugin's panics there are no error of the composition's.
		claims, cerr := p.claims(cfg)
		lazy, lerr := p.lazy(cfg)
		pl.claims, pl.lazy = claims, lazy
		if e.Disabled {
			continue
		}
		names, err := p.secrets(cfg)
		for _, err := range []error{cerr, lerr, err} {
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: plugin %s: %w", e.where(e.Line), p.name, err))
			}
		}
		pl.secrets = names
	}
	// Claims are checked among the entries that decoded, whatever is wrong
	// elsewhere, so that one pass of check shows every problem.
	errs = append(errs, checkClaims(slices.DeleteFunc(slices.Clone(out), func(pl *planned) bool { return pl.cfg == nil }))...)
	if len(errs) == 0 {
		errs = append(errs, checkServices(out)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func pluginNames() []string {
	var names []string
	for _, p := range registeredPlugins() {
		names = append(names, p.name)
	}
	return names
}

// where prefixes a message about e with its file, line and id.
func (e *Entry) where(line int) string {
	return fmt.Sprintf("%s: entry %q", e.place(line), e.ID)
}

// place is "file:line" for a line of e's file (e's own line when line is
// 0), or the file alone for an entry built in code.
func (e *Entry) place(line int) string {
	if line <= 0 {
		line = e.Line
	}
	file := e.File
	if file == "" {
		file = "composition"
	}
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// secretsOf gathers the secret variables of the entries of list.
func secretsOf(list []*planned) map[string]bool {
	out := map[string]bool{}
	for _, pl := range list {
		for _, name := range pl.secrets {
			if name != "" {
				out[name] = true
			}
		}
	}
	return out
}

// checkClaims reports a name two enabled entries both claim, at the later
// one, naming the first.
func checkClaims(list []*planned) []error {
	var errs []error
	type holder struct {
		pl  *planned
		key string
	}
	holders := map[Claim]holder{}
	for _, pl := range list {
		if pl.entry.Disabled {
			continue
		}
		for _, c := range pl.claims {
			name := Claim{Kind: c.Kind, Value: c.Value}
			first, dup := holders[name]
			if !dup {
				holders[name] = holder{pl, c.Key}
				continue
			}
			if first.pl == pl {
				continue // the plugin listed the name twice: one entry, one holder
			}
			e := &pl.entry
			at := e.where(e.keyLine(c.Key))
			if c.Key != "" {
				at += ": config key " + c.Key
			}
			fe := &first.pl.entry
			errs = append(errs, fmt.Errorf("%s: %s %q is already claimed by entry %q (%s); each must be unique, or disable one entry",
				at, c.Kind, c.Value, fe.ID, fe.place(fe.keyLine(first.key))))
		}
	}
	return errs
}

// keyLine is the line of the config key at the dotted path, or the
// entry's line when it is not known.
func (e *Entry) keyLine(path string) int {
	if l := nodeKeyLine(e.config, path); l > 0 {
		return l
	}
	return e.Line
}

// checkServices reports services two enabled entries would both provide, and
// injection cycles among enabled entries.
func checkServices(list []*planned) []error {
	var errs []error
	providers := map[string]*planned{}
	for _, pl := range list {
		if pl.entry.Disabled {
			continue
		}
		for _, svc := range pl.plugin.provides {
			if other, dup := providers[svc]; dup {
				errs = append(errs, fmt.Errorf("%s: provides service %q, which entry %q already provides; disable one of them", pl.entry.where(pl.entry.Line), svc, other.entry.ID))
				continue
			}
			providers[svc] = pl
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	mark := map[*planned]int{}
	var stack []string
	var visit func(pl *planned) bool
	visit = func(pl *planned) bool {
		switch mark[pl] {
		case visiting:
			i := slices.Index(stack, pl.entry.ID)
			cycle := append(slices.Clone(stack[i:]), pl.entry.ID)
			errs = append(errs, fmt.Errorf("%s: service cycle %s; break it by making one injection Optional or removing an entry", pl.entry.where(pl.entry.Line), strings.Join(cycle, " -> ")))
			return false
		case done:
			return true
		}
		mark[pl] = visiting
		stack = append(stack, pl.entry.ID)
		for _, d := range pl.plugin.inject {
			if prov := providers[d.Service]; prov != nil && prov != pl {
				if !visit(prov) {
					return false
				}
			}
		}
		stack = stack[:len(stack)-1]
		mark[pl] = done
		return true
	}
	for _, pl := range list {
		if !pl.entry.Disabled && mark[pl] == unvisited {
			if !visit(pl) {
				break
			}
		}
	}
	return errs
}

var (
	yamlUnmarshaler = reflect.TypeFor[yamlv3.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// plainStruct reports whether t is a struct that yaml decodes field by field
// (one with its own unmarshaler decodes itself).
func plainStruct(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	pt := reflect.PointerTo(t)
	return !pt.Implements(yamlUnmarshaler) && !pt.Implements(textUnmarshaler)
}

func structLike(t reflect.Type) bool {
	return plainStruct(t) || t.Kind() == reflect.Pointer && plainStruct(t.Elem())
}

// Plugins lists the registered plugins, sorted by name.
func Plugins() []PluginInfo {
	var out []PluginInfo
	for _, p := range registeredPlugins() {
		info := PluginInfo{
			Name:        p.name,
			Description: p.description,
			Builtin:     p.builtin,
			Inject:      slices.Clone(p.inject),
			Provides:    slices.Clone(p.provides),
		}
		def := reflect.ValueOf(p.newConfig()).Elem()
		info.Fields = configFields(def, "", map[reflect.Type]bool{})
		out = append(out, info)
	}
	return out
}

// configFields lists the keys of a config value, recursing into structs.
// A struct type already being listed on the way down (a type that holds
// itself) is listed as one key, not entered again.
func configFields(v reflect.Value, path string, open map[reflect.Type]bool) []ConfigField {
	t := v.Type()
	if t.Kind() == reflect.Pointer && plainStruct(t.Elem()) {
		if v.IsNil() {
			v = reflect.New(t.Elem()).Elem()
		} else {
			v = v.Elem()
		}
		t = v.Type()
	}
	if !plainStruct(t) || open[t] {
		return nil
	}
	open[t] = true
	defer delete(open, t)
	fields, _ := yamlfield.Fields(t)
	// Field order, not key order: the order the author wrote them in.
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return slices.Compare(fields[keys[i]].Index, fields[keys[j]].Index) < 0
	})
	var out []ConfigField
	for _, k := range keys {
		f := fields[k]
		fv := v.FieldByIndex(f.Index)
		p := joinKey(path, k)
		if sub := configFields(fv, p, open); sub != nil {
			out = append(out, sub...)
			continue
		}
		// The keys of each item of a list or map of structs.
		ft := f.Type
		if (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String) && structLike(ft.Elem()) {
			suffix := "[]"
			if ft.Kind() == reflect.Map {
				suffix = ".*"
			}
			if sub := configFields(reflect.New(ft.Elem()).Elem(), p+suffix, open); sub != nil {
				out = append(out, sub...)
				continue
			}
		}
		out = append(out, ConfigField{Key: p, Type: f.Type.String(), Default: formatDefault(fv)})
	}
	return out
}

func formatDefault(v reflect.Value) string {
	if v.IsZero() {
		return ""
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.Struct, reflect.Pointer:
		b, err := yamlv3.Marshal(v.Interface())
		if err != nil {
			return fmt.Sprint(v.Interface())
		}
		var flow any
		_ = yamlv3.Unmarshal(b, &flow)
		n := &yamlv3.Node{}
		_ = n.Encode(flow)
		setFlow(n)
		b, _ = yamlv3.Marshal(n)
		return strings.TrimSpace(string(b))
	}
	return fmt.Sprint(v.Interface())
}

func setFlow(n *yamlv3.Node) {
	n.Style |= yamlv3.FlowStyle
	for _, c := range n.Content {
		setFlow(c)
	}
}
