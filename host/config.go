package host

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/internal/yamlfield"
	yamlv3 "go.yaml.in/yaml/v3"
)

// planned is one entry of a validated composition: its plugin and its
// decoded config (a pointer to the plugin's config type).
type planned struct {
	entry  Entry
	plugin *plugin
	cfg    any
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
	for _, p := range registeredPlugins() {
		if _, ok := listed[p.name]; p.builtin && !ok {
			out = append(out, &planned{entry: Entry{ID: p.name, Name: p.name, File: "(built-in)"}})
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
	for _, e := range extra {
		if _, ok := listed[e.ID]; !ok {
			out = append(out, &planned{entry: e})
		}
	}
	for _, pl := range out {
		e := &pl.entry
		p, ok := lookupPlugin(e.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown plugin %q (registered: %s)", e.where(e.Line), e.Name, strings.Join(pluginNames(), ", ")))
			continue
		}
		pl.plugin = p
		cfg, cerrs := decodeConfig(p, e)
		errs = append(errs, cerrs...)
		pl.cfg = cfg
	}
	if len(errs) == 0 {
		errs = append(errs, checkServices(out)...)
		errs = append(errs, checkClaims(out)...)
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
	if line <= 0 {
		line = e.Line
	}
	file := e.File
	if file == "" {
		file = "composition"
	}
	if line <= 0 {
		return fmt.Sprintf("%s: entry %q", file, e.ID)
	}
	return fmt.Sprintf("%s:%d: entry %q", file, line, e.ID)
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
		for _, c := range pl.plugin.claims(pl.cfg) {
			name := Claim{Kind: c.Kind, Value: c.Value}
			first, dup := holders[name]
			if !dup {
				holders[name] = holder{pl, c.Key}
				continue
			}
			e := &pl.entry
			at := e.where(e.keyLine(c.Key))
			if c.Key != "" {
				at += ": config key " + c.Key
			}
			fe := &first.pl.entry
			errs = append(errs, fmt.Errorf("%s: %s %q is already claimed by entry %q (%s:%d); each must be unique, or disable one entry",
				at, c.Kind, c.Value, fe.ID, fe.File, fe.keyLine(first.key)))
		}
	}
	return errs
}

// keyLine is the line of the config key at the dotted path, or the
// entry's line when it is not known.
func (e *Entry) keyLine(path string) int {
	if l := e.KeyLines[path]; l > 0 {
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

// decodeConfig decodes e's config over the plugin's defaults, strictly, and
// validates it. It returns the pointer newConfig made.
func decodeConfig(p *plugin, e *Entry) (any, []error) {
	cfg := p.newConfig()
	d := &configDecoder{entry: e, plugin: p}
	d.value(reflect.ValueOf(cfg).Elem(), e.Config, "")
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	if err := p.validate(cfg); err != nil {
		return nil, []error{fmt.Errorf("%s: invalid config: %w", e.where(e.Line), err)}
	}
	return cfg, nil
}

// configDecoder decodes generic YAML values into a typed config, reporting
// every key the type does not have. yaml.v3's KnownFields works only on a
// Decoder reading bytes, and its line numbers would then be those of a
// re-encoded document; walking the types here keeps the composition's lines.
type configDecoder struct {
	entry  *Entry
	plugin *plugin
	errs   []error
}

func (d *configDecoder) fail(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.errs = append(d.errs, fmt.Errorf("%s: config key %s: %s", d.entry.where(d.entry.KeyLines[path]), path, msg))
}

// value decodes src into v (settable). Structs, and slices and maps of
// structs, are walked key by key; everything else is decoded by yaml.
func (d *configDecoder) value(v reflect.Value, src any, path string) {
	t := v.Type()
	if path == "" && src == nil {
		return
	}
	switch {
	case plainStruct(t):
		if m, ok := src.(map[string]any); ok {
			d.structFields(v, m, path)
			return
		}
	case t.Kind() == reflect.Pointer && plainStruct(t.Elem()):
		if m, ok := src.(map[string]any); ok {
			if v.IsNil() {
				v.Set(reflect.New(t.Elem()))
			}
			d.structFields(v.Elem(), m, path)
			return
		}
	case t.Kind() == reflect.Slice && structLike(t.Elem()):
		if items, ok := src.([]any); ok {
			out := reflect.MakeSlice(t, len(items), len(items))
			for i, item := range items {
				d.value(out.Index(i), item, fmt.Sprintf("%s[%d]", path, i))
			}
			v.Set(out)
			return
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && structLike(t.Elem()):
		if m, ok := src.(map[string]any); ok {
			out := reflect.MakeMapWithSize(t, len(m))
			for k, item := range m {
				elem := reflect.New(t.Elem()).Elem()
				d.value(elem, item, joinKey(path, k))
				out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
			}
			v.Set(out)
			return
		}
	}
	if assignFast(v, src) {
		return
	}
	b, err := yamlv3.Marshal(src)
	if err == nil {
		err = yamlv3.Unmarshal(b, v.Addr().Interface())
	}
	switch {
	case err == nil:
	case path == "":
		d.errs = append(d.errs, fmt.Errorf("%s: config: %s", d.entry.where(d.entry.Line), stripYAMLLine(err)))
	default:
		d.fail(path, "%s", stripYAMLLine(err))
	}
}

func (d *configDecoder) structFields(v reflect.Value, m map[string]any, path string) {
	fields, _ := yamlfield.Fields(v.Type())
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Report in file order, so the first error is the first line.
	sort.Slice(keys, func(i, j int) bool {
		li, lj := d.entry.KeyLines[joinKey(path, keys[i])], d.entry.KeyLines[joinKey(path, keys[j])]
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		p := joinKey(path, k)
		f, ok := fields[k]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			sort.Strings(known)
			switch near := closest(k, known); {
			case len(known) == 0:
				d.fail(p, "unknown key; plugin %s takes no config here", d.plugin.name)
			case near != "":
				d.fail(p, "unknown key; did you mean %s? (known keys: %s)", near, strings.Join(known, ", "))
			default:
				d.fail(p, "unknown key (known keys: %s)", strings.Join(known, ", "))
			}
			continue
		}
		d.value(v.FieldByIndex(f.Index), m[k], p)
	}
}

// assignFast sets v from src when both are plain scalars, or slices and
// string-keyed maps of them, exactly as yaml would; it reports false to
// leave anything else to yaml (a round trip through yaml costs a
// hundredfold more, and Apply decodes every entry of every reload).
func assignFast(v reflect.Value, src any) bool {
	t := v.Type()
	if t == durationType || reflect.PointerTo(t).Implements(yamlUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return false
	}
	switch x := src.(type) {
	case string:
		if t.Kind() == reflect.String {
			v.SetString(x)
			return true
		}
	case bool:
		if t.Kind() == reflect.Bool {
			v.SetBool(x)
			return true
		}
	case int:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if !v.OverflowInt(int64(x)) {
				v.SetInt(int64(x))
				return true
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if x >= 0 && !v.OverflowUint(uint64(x)) {
				v.SetUint(uint64(x))
				return true
			}
		case reflect.Float32, reflect.Float64:
			v.SetFloat(float64(x))
			return true
		}
	case float64:
		if t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 {
			v.SetFloat(x)
			return true
		}
	case []any:
		if t.Kind() != reflect.Slice {
			return false
		}
		out := reflect.MakeSlice(t, len(x), len(x))
		for i, item := range x {
			if !assignFast(out.Index(i), item) {
				return false
			}
		}
		v.Set(out)
		return true
	case map[string]any:
		if t.Kind() != reflect.Map || t.Key().Kind() != reflect.String {
			return false
		}
		// Like yaml, merge into a map that holds defaults.
		out := v
		if v.IsNil() {
			out = reflect.MakeMapWithSize(t, len(x))
		}
		for k, item := range x {
			elem := reflect.New(t.Elem()).Elem()
			if !assignFast(elem, item) {
				return false
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
		}
		v.Set(out)
		return true
	}
	return false
}

var durationType = reflect.TypeFor[time.Duration]()

// closest returns the known key nearest to key (case-insensitive edit
// distance of at most a third of its length), or "".
func closest(key string, known []string) string {
	best, bestDist := "", len(key)/3+1
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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

var yamlLinePrefix = regexp.MustCompile(`line \d+: `)

// stripYAMLLine drops the line numbers yaml puts in decode errors: they
// count lines of a re-encoded value, not of the composition.
func stripYAMLLine(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	msg = yamlLinePrefix.ReplaceAllString(msg, "")
	return strings.Join(strings.Fields(msg), " ")
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
		info.Fields = configFields(def, "")
		out = append(out, info)
	}
	return out
}

// configFields lists the keys of a config value, recursing into structs.
func configFields(v reflect.Value, path string) []ConfigField {
	t := v.Type()
	if t.Kind() == reflect.Pointer && plainStruct(t.Elem()) {
		if v.IsNil() {
			v = reflect.New(t.Elem()).Elem()
		} else {
			v = v.Elem()
		}
		t = v.Type()
	}
	if !plainStruct(t) {
		return nil
	}
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
		if sub := configFields(fv, p); sub != nil {
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
			if sub := configFields(reflect.New(ft.Elem()).Elem(), p+suffix); sub != nil {
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
