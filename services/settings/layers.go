package settings

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/knadh/koanf/v2"
	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/internal/yamlfield"
)

// Settings come in three layers, later ones winning key by key: the user
// file (the Store's path, the only one written), the project file (read
// only, beside the composition), and environment overrides. koanf merges
// them: maps merge key by key, any other value (a list included) is
// replaced whole by a later layer's.

// EnvPrefix starts the name of an environment override:
// DSH_SETTINGS__<SECTION>__<KEY>[__<KEY>...]=<value>. The section is
// matched without regard to case, with _ standing for - (MCP_ADAPTER is
// mcp-adapter); keys are written exactly as in the file (serverIds). The
// value is read as YAML: 42 is an int, true a bool, [a, b] a list,
// {k: v} a map, '"42"' the string 42, and an empty value null.
const EnvPrefix = "DSH_SETTINGS__"

// envSep separates the section and keys in an override's name.
const envSep = "__"

// Option configures Open.
type Option func(*Store)

// WithProject adds the project settings file at path, read after the user
// file and never written. An empty path adds none.
func WithProject(path string) Option {
	return func(st *Store) { st.project = path }
}

// WithEnviron adds the overrides (EnvPrefix) of env, in os.Environ form,
// read after both files.
func WithEnviron(env []string) Option {
	return func(st *Store) { st.environ = env }
}

// envVar is one environment override.
type envVar struct {
	name string   // the variable's name
	path []string // section, then keys
	val  any
}

// envLayer is the overrides of an environment, parsed once at Open.
type envLayer struct {
	vars []envVar // sorted by path length, then name
	tree map[string]any
}

// parseEnv reads the overrides of env. A name or value that cannot be
// read is an error naming the variable.
func parseEnv(env []string) (*envLayer, error) {
	l := &envLayer{tree: map[string]any{}}
	var errs []error
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, EnvPrefix)
		if !ok {
			continue
		}
		path := strings.Split(rest, envSep)
		path[0] = strings.ToLower(strings.ReplaceAll(path[0], "_", "-"))
		if err := checkSection(path[0]); err != nil {
			errs = append(errs, fmt.Errorf("settings: environment variable %s: %w; name it %s<SECTION>%s<KEY>", name, err, EnvPrefix, envSep))
			continue
		}
		if slices.Contains(path[1:], "") {
			errs = append(errs, fmt.Errorf("settings: environment variable %s: an empty key between %s; name it %s<SECTION>%s<KEY>", name, envSep, EnvPrefix, envSep))
			continue
		}
		var v any
		if err := yaml.Unmarshal([]byte(val), &v); err != nil {
			errs = append(errs, fmt.Errorf("settings: environment variable %s: its value is read as YAML and does not parse (%v); quote it to mean a string", name, err))
			continue
		}
		l.vars = append(l.vars, envVar{name: name, path: path, val: stringKeys(v)})
	}
	// Shorter paths first, so that a longer one refines a map a shorter
	// one set (DSH_SETTINGS__UI='{theme: a}' and DSH_SETTINGS__UI__theme=b).
	sort.Slice(l.vars, func(i, j int) bool {
		if a, b := len(l.vars[i].path), len(l.vars[j].path); a != b {
			return a < b
		}
		return l.vars[i].name < l.vars[j].name
	})
	for _, ev := range l.vars {
		m := l.tree
		for i, k := range ev.path[:len(ev.path)-1] {
			next, ok := m[k]
			if !ok {
				sub := map[string]any{}
				m[k], m = sub, sub
				continue
			}
			sub, isMap := next.(map[string]any)
			if !isMap {
				errs = append(errs, fmt.Errorf("settings: environment variable %s: %s is set to a value that is not a map by %s", ev.name, strings.Join(ev.path[:i+1], "."), l.setter(ev.path[:i+1])))
				m = nil
				break
			}
			m = sub
		}
		if m != nil {
			m[ev.path[len(ev.path)-1]] = ev.val
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return l, nil
}

// setter is the variable that set path, the one with the longest path
// that is path or holds it; "" when none did.
func (l *envLayer) setter(path []string) string {
	name, best := "", -1
	for _, ev := range l.vars {
		if len(ev.path) <= len(path) && len(ev.path) >= best && slices.Equal(ev.path, path[:len(ev.path)]) {
			name, best = ev.name, len(ev.path)
		}
	}
	return name
}

// stringKeys returns v with every map keyed by strings, as the files'
// maps are once koanf has read them.
func stringKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = stringKeys(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = stringKeys(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = stringKeys(x)
		}
		return t
	}
	return v
}

// mapSource is a koanf.Provider of a layer already parsed: the files are
// parsed once, as nodes, for their lines and the user file's rewrite.
type mapSource map[string]any

func (m mapSource) ReadBytes() ([]byte, error) {
	return nil, errors.New("settings: a layer is provided parsed")
}

func (m mapSource) Read() (map[string]any, error) { return m, nil }

// snapshot is one read of the layers.
type snapshot struct {
	user, project *file // project is nil without a project file
	env           *envLayer
	sum           [32]byte // of both files' bytes, to tell a version apart
}

// snapshot reads both files. A file that does not parse is an error, the
// snapshot's sum still set so that Watch reports each bad version once.
func (st *Store) snapshot() (*snapshot, error) {
	s := &snapshot{env: st.env}
	h := sha256.New()
	udata, uerr := st.read()
	h.Write(udata)
	h.Write([]byte{0})
	var pdata []byte
	var perr error
	if st.project != "" {
		pdata, perr = readProject(st.project)
		h.Write(pdata)
	}
	h.Sum(s.sum[:0])
	switch {
	case errors.Is(uerr, fs.ErrNotExist):
		s.user = &file{}
	case uerr != nil:
		return s, uerr
	default:
		f, err := parse(st.path, udata)
		if err != nil {
			return s, err
		}
		s.user = f
	}
	if st.project != "" {
		if perr != nil {
			return s, perr
		}
		f, err := parse(st.project, pdata)
		if err != nil {
			return s, err
		}
		s.project = f
	}
	return s, nil
}

// readProject reads the project file; a missing one reads as empty.
func readProject(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("settings: read the project settings file %s: %w", path, err)
	}
	return data, nil
}

// layer is one layer of a snapshot, loaded into a koanf of its own.
type layer struct {
	source string // the file's path, or "environment"
	k      *koanf.Koanf
	env    *envLayer // for the environment layer
}

// layers loads each layer present into its own koanf: all sections, or
// only the one named by only.
func (s *snapshot) layers(only string) ([]layer, error) {
	var out []layer
	add := func(source string, m map[string]any, env *envLayer) error {
		if len(m) == 0 {
			return nil
		}
		k := koanf.New(".")
		if err := k.Load(mapSource(m), nil); err != nil {
			return fmt.Errorf("settings: load %s: %w", source, err)
		}
		out = append(out, layer{source: source, k: k, env: env})
		return nil
	}
	files := []*file{s.user}
	if s.project != nil {
		files = append(files, s.project)
	}
	for _, f := range files {
		m, err := f.sections(only)
		if err != nil {
			return nil, err
		}
		if err := add(f.name, m, nil); err != nil {
			return nil, err
		}
	}
	if s.env != nil {
		m := map[string]any{}
		for sec, v := range s.env.tree {
			if only == "" || sec == only {
				m[sec] = copyValue(v)
			}
		}
		if err := add("environment", m, s.env); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// copyValue copies the maps and lists of v: koanf merges a layer's maps
// in place, and the environment's tree is read again by every snapshot.
func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = copyValue(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = copyValue(x)
		}
		return l
	}
	return v
}

// sections decodes the file's sections (or only the one named) into
// generic values.
func (f *file) sections(only string) (map[string]any, error) {
	m := map[string]any{}
	if f.top == nil {
		return m, nil
	}
	for i := 0; i+1 < len(f.top.Content); i += 2 {
		k, v := f.top.Content[i], f.top.Content[i+1]
		if only != "" && k.Value != only {
			continue
		}
		var x any
		if err := v.Decode(&x); err != nil {
			return nil, fmt.Errorf("settings file %s:%d: section %q: %w", f.name, v.Line, k.Value, err)
		}
		m[k.Value] = stringKeys(x)
	}
	return m, nil
}

// mergeLayers merges layers, later ones winning.
func mergeLayers(layers []layer) (*koanf.Koanf, error) {
	k := koanf.New(".")
	for _, l := range layers {
		if err := k.Merge(l.k); err != nil {
			return nil, fmt.Errorf("settings: merge %s: %w", l.source, err)
		}
	}
	return k, nil
}

// sourceOf names where the effective value of key (parts, its path) came
// from: the last layer that has it, and for the environment the variable
// that set it.
func sourceOf(layers []layer, key string, parts []string) string {
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		if !l.k.Exists(key) {
			continue
		}
		if l.env != nil {
			if name := l.env.setter(parts); name != "" {
				return name
			}
		}
		return l.source
	}
	return ""
}

// Value is one effective settings key: its dotted path (section first),
// its value, and where the value came from (a file's path, or the name of
// the environment variable).
type Value struct {
	Key    string
	Value  any
	Source string
}

// Effective returns every key of the merged settings, sorted, each with
// the layer it came from. A map's keys are listed one by one; a list, or
// an empty map, is one value.
func (st *Store) Effective() ([]Value, error) {
	s, err := st.snapshot()
	if err != nil {
		return nil, err
	}
	layers, err := s.layers("")
	if err != nil {
		return nil, err
	}
	k, err := mergeLayers(layers)
	if err != nil {
		return nil, err
	}
	all, parts := k.All(), k.KeyMap()
	keys := make([]string, 0, len(all))
	for key := range all {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	out := make([]Value, 0, len(keys))
	for _, key := range keys {
		out = append(out, Value{Key: key, Value: all[key], Source: sourceOf(layers, key, parts[key])})
	}
	return out, nil
}

// ProjectPath returns the project settings file's path, absolute, or ""
// when the Store has none.
func (st *Store) ProjectPath() string { return st.project }

// readSection decodes section of the snapshot into v: decoded from its node when one
// file alone holds it, so that an error names its line; merged by koanf
// when more than one layer does.
func readSection[T any](s *snapshot, section string, v *T) (ok bool, err error) {
	var holders []*yaml.Node
	var names []string
	for _, f := range []*file{s.user, s.project} {
		if f == nil {
			continue
		}
		if _, val := f.section(section); val != nil {
			holders, names = append(holders, val), append(names, f.name)
		}
	}
	_, inEnv := s.env.section(section)
	if inEnv {
		names = append(names, s.env.names(section)...)
	}
	switch {
	case len(names) == 0:
		return false, nil
	case len(holders) == 1 && !inEnv:
		return true, decodeSection(names[0], section, holders[0], v)
	}
	layers, err := s.layers(section)
	if err != nil {
		return false, err
	}
	k, err := mergeLayers(layers)
	if err != nil {
		return false, err
	}
	var n yaml.Node
	if err := n.Encode(k.Get(section)); err != nil {
		return false, fmt.Errorf("settings: section %q: %w", section, err)
	}
	if err := n.Decode(v); err != nil {
		_, msg := yamlfield.ErrorLine(err)
		return false, fmt.Errorf("settings: section %q, merged from %s: %s; fix it in one of them", section, strings.Join(names, ", "), msg)
	}
	return true, nil
}

// section reports whether the environment sets anything of section.
func (l *envLayer) section(name string) (any, bool) {
	if l == nil {
		return nil, false
	}
	v, ok := l.tree[name]
	return v, ok
}

// names lists the variables that set something of section.
func (l *envLayer) names(section string) []string {
	var out []string
	for _, ev := range l.vars {
		if ev.path[0] == section {
			out = append(out, ev.name)
		}
	}
	return out
}

// absProject resolves the project path given to Open.
func absProject(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("settings: resolve %s: %w", p, err)
	}
	return abs, nil
}
