package host

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/internal/editdist"
	"github.com/dsh-host/dsh-host/internal/yamlfield"
)

// Decode decodes and validates e's config exactly as the host does before
// applying it: over its plugin's defaults, strictly, each problem naming
// the file, entry and key. C is the plugin's config type, so a front end
// that needs one entry's settings without starting it (dsh-host login)
// gets them typed:
//
//	cfg, err := host.Decode[mcpclient.Config](e)
//
// An entry of another plugin, or of one whose config is not a C, is an
// error naming both, not a zero config.
func Decode[C any](e *Entry) (*C, error) {
	p, ok := lookupPlugin(e.Name)
	if !ok {
		return nil, fmt.Errorf("%s: unknown plugin %q (registered: %s)", e.where(e.Line), e.Name, strings.Join(pluginNames(), ", "))
	}
	if want := reflect.TypeFor[C](); p.configType != want {
		return nil, fmt.Errorf("%s: plugin %s's config is %v, not %v", e.where(e.Line), p.name, p.configType, want)
	}
	cfg, errs := decodeConfig(p, e)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cfg.(*C), nil
}

// decodeConfig decodes e's config over the plugin's defaults, strictly, and
// validates it. It returns the pointer newConfig made.
//
// It works on the config's YAML node, in one pass: a walk of the node
// against the config type reports every key the type does not have, with
// its line (yaml.v3's KnownFields exists only on a Decoder reading bytes,
// and stops at the first), then yaml.v3 decodes the node itself, so every
// field form decodes exactly as yaml.v3 has it.
func decodeConfig(p *plugin, e *Entry) (any, []error) {
	cfg := p.newConfig()
	n := e.config
	if n == nil && len(e.Config) > 0 {
		// An entry built in code: its values have no lines, and errors
		// give the entry's.
		var err error
		if n, err = valueNode(e.Config); err != nil {
			return nil, []error{fmt.Errorf("%s: config: %w", e.where(e.Line), err)}
		}
	}
	if n != nil {
		d := &configDecoder{entry: e, plugin: p}
		d.walk(n, p.configType)
		if len(d.errs) > 0 {
			return nil, d.errs
		}
		if err := decodeNode(n, cfg); err != nil {
			return nil, d.decodeErrors(n, err)
		}
	}
	if err := p.validate(cfg); err != nil {
		return nil, validateErrors(e, err)
	}
	return cfg, nil
}

// valueNode returns the node yaml.v3 would encode v as. The generic values
// a composition decodes to (maps, lists, scalars) are built directly:
// Node.Encode renders text and parses it again, twenty times the cost.
func valueNode(v any) (*yamlv3.Node, error) {
	scalar := func(tag, value string) *yamlv3.Node {
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: tag, Value: value}
	}
	switch v := v.(type) {
	case nil:
		return scalar("!!null", "null"), nil
	case string:
		return scalar("!!str", v), nil
	case bool:
		return scalar("!!bool", strconv.FormatBool(v)), nil
	case int:
		return scalar("!!int", strconv.Itoa(v)), nil
	case int64:
		return scalar("!!int", strconv.FormatInt(v, 10)), nil
	case uint64:
		return scalar("!!int", strconv.FormatUint(v, 10)), nil
	case []any:
		n := &yamlv3.Node{Kind: yamlv3.SequenceNode, Tag: "!!seq", Content: make([]*yamlv3.Node, len(v))}
		for i, item := range v {
			c, err := valueNode(item)
			if err != nil {
				return nil, err
			}
			n.Content[i] = c
		}
		return n, nil
	case map[string]any:
		// Sorted, as yaml.v3 encodes a map, so errors come in a stable order.
		n := &yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map", Content: make([]*yamlv3.Node, 0, 2*len(v))}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			c, err := valueNode(v[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, scalar("!!str", k), c)
		}
		return n, nil
	}
	// Anything else (floats, typed slices and maps, durations) as yaml.v3
	// encodes it.
	n := new(yamlv3.Node)
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return n, nil
}

// decodeNode is n.Decode(v), with a panic (a config type's own
// UnmarshalYAML, say) turned into an error.
func decodeNode(n *yamlv3.Node, v any) error {
	return guard("decoding", func() error { return n.Decode(v) })
}

// configDecoder walks a config node against the config's Go type.
type configDecoder struct {
	entry  *Entry
	plugin *plugin
	errs   []error
	// path is the key path to the node being walked, kept as segments so
	// that a walk without errors builds no strings.
	path []pathSeg
	// visited, when set, collects every node walked, with the Go type
	// yaml.v3 decodes it into (see decodeErrors).
	visited *[]visitedNode
}

// pathSeg is a sequence index, or a mapping key when idx < 0.
type pathSeg struct {
	key string
	idx int
}

type visitedNode struct {
	path string
	n    *yamlv3.Node
	t    reflect.Type
}

func (d *configDecoder) pathString() string {
	var b strings.Builder
	for _, s := range d.path {
		if s.idx >= 0 {
			b.WriteString("[" + strconv.Itoa(s.idx) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// walk follows n into t as yaml.v3 would decode it, reporting the keys of a
// mapping decoded into a struct that the struct does not have.
func (d *configDecoder) walk(n *yamlv3.Node, t reflect.Type) {
	if n.Kind == yamlv3.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if d.visited != nil {
		*d.visited = append(*d.visited, visitedNode{d.pathString(), n, t})
	} else if !mayHoldStruct(t) {
		return // nothing below can be an unknown key
	}
	if yamlfield.DecodesItself(t) {
		return // its keys are its own business
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if n.Kind == yamlv3.MappingNode {
			d.mapping(n, t)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yamlv3.SequenceNode {
			for i, c := range n.Content {
				d.path = append(d.path, pathSeg{idx: i})
				d.walk(c, t.Elem())
				d.path = d.path[:len(d.path)-1]
			}
		}
	}
}

// mapping walks the pairs of n, decoded into a struct or a map type t.
func (d *configDecoder) mapping(n *yamlv3.Node, t reflect.Type) {
	var s *yamlfield.Struct
	if t.Kind() == reflect.Struct {
		var err error
		if s, err = yamlfield.StructOf(t); err != nil {
			// yaml.v3 would panic on this type: a bug of the plugin's.
			d.errs = append(d.errs, fmt.Errorf("%s: plugin %s: config %v", d.entry.where(n.Line), d.plugin.name, err))
			return
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yamlv3.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if isMergeKey(k) {
			d.merge(v, t)
			continue
		}
		if k.Kind != yamlv3.ScalarNode || k.ShortTag() == "!!null" {
			continue // not a name; yaml.v3 skips it too
		}
		elem := reflect.Type(nil)
		switch {
		case s == nil:
			elem = t.Elem()
		case s.Fields[k.Value] != nil:
			elem = s.Fields[k.Value]
		case s.InlineMap != nil:
			elem = s.InlineMap.Elem()
		default:
			d.unknown(k, s)
			continue
		}
		d.path = append(d.path, pathSeg{key: k.Value, idx: -1})
		d.walk(v, elem)
		d.path = d.path[:len(d.path)-1]
	}
}

// merge walks the mappings a "<<" key merges into t.
func (d *configDecoder) merge(v *yamlv3.Node, t reflect.Type) {
	if v.Kind == yamlv3.SequenceNode {
		for _, c := range v.Content {
			d.walk(c, t)
		}
		return
	}
	d.walk(v, t)
}

func isMergeKey(k *yamlv3.Node) bool {
	return k.Kind == yamlv3.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

func (d *configDecoder) unknown(k *yamlv3.Node, s *yamlfield.Struct) {
	var msg string
	switch near := closest(k.Value, s.Keys); {
	case len(s.Keys) == 0:
		msg = fmt.Sprintf("unknown key; plugin %s takes no config here", d.plugin.name)
	case near != "":
		msg = fmt.Sprintf("unknown key; did you mean %s? (known keys: %s)", near, strings.Join(s.Keys, ", "))
	default:
		msg = fmt.Sprintf("unknown key (known keys: %s)", strings.Join(s.Keys, ", "))
	}
	d.errs = append(d.errs, fmt.Errorf("%s: config key %s: %s", d.entry.where(k.Line), joinKey(d.pathString(), k.Value), msg))
}

// mayHoldStruct reports whether a value of type t can hold a struct to walk
// into: a map[string]string or a []int cannot, and is not walked.
func mayHoldStruct(t reflect.Type) bool {
	for {
		switch t.Kind() {
		case reflect.Struct:
			return true
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return false
		}
	}
}

// decodeErrors turns yaml.v3's decoding error into errors that name the
// entry, the key path and the line. yaml.v3 gives only a line (none for an
// error of a type's own unmarshaler), and a line may hold several values
// (a flow mapping): the value meant is the deepest one on that line that,
// decoded on its own, fails with the same problem. This is the error path
// only; a config that decodes costs nothing of it.
func (d *configDecoder) decodeErrors(n *yamlv3.Node, err error) []error {
	var all []visitedNode
	w := &configDecoder{entry: d.entry, plugin: d.plugin, visited: &all}
	w.walk(n, d.plugin.configType)
	var errs []error
	for _, p := range yamlfield.Problems(err) {
		path, line := "", p.Line
		// Backwards, so that a value comes before those that hold it.
		for i := len(all) - 1; i >= 0; i-- {
			v := all[i]
			if p.Line > 0 && v.n.Line != p.Line {
				continue
			}
			if slices.Contains(yamlfield.Problems(decodeNode(v.n, reflect.New(v.t).Interface())), p) {
				path, line = v.path, v.n.Line
				break
			}
		}
		if line == 0 {
			line = n.Line
		}
		errs = append(errs, d.keyError(path, line, p.Msg))
	}
	return errs
}

func (d *configDecoder) keyError(path string, line int, msg string) error {
	if path == "" {
		return fmt.Errorf("%s: config: %s", d.entry.where(line), msg)
	}
	return fmt.Errorf("%s: config key %s: %s", d.entry.where(line), path, msg)
}

// closest returns the known key nearest to key (case-insensitive edit
// distance of at most a third of its length), or "".
func closest(key string, known []string) string {
	best, bestDist := "", len(key)/3+1
	for _, k := range known {
		if d := editdist.Levenshtein(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// nodeKeyLine returns the line of the key at a dotted path ("env.TOKEN",
// "args[1]") under the config node n, or 0 when n has no such key.
func nodeKeyLine(n *yamlv3.Node, path string) int {
	if n == nil {
		return 0
	}
	line := 0
	var visit func(n *yamlv3.Node, p string) bool
	visit = func(n *yamlv3.Node, p string) bool {
		switch n.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				kp := joinKey(p, n.Content[i].Value)
				if kp == path {
					line = n.Content[i].Line
					return true
				}
				if strings.HasPrefix(path, kp) && visit(n.Content[i+1], kp) {
					return true
				}
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				ip := p + "[" + strconv.Itoa(i) + "]"
				if ip == path {
					line = c.Line
					return true
				}
				if strings.HasPrefix(path, ip) && visit(c, ip) {
					return true
				}
			}
		}
		return false
	}
	visit(n, "")
	return line
}
