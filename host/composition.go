package host

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-host/dsh-host/internal/yamlfield"
	yamlv3 "go.yaml.in/yaml/v3"
)

// entryKeys are the keys a composition entry may have; anything else is a
// typo that would otherwise be silently ignored.
var entryKeys = []string{"id", "name", "config", "disabled"}

var entryID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ReadComposition reads the composition file at path and the files its
// include list names, expanding ${VAR} and ${VAR:-default} with lookupEnv
// (os.LookupEnv if nil).
//
// On error the composition returned holds the entries that parsed (nil
// when the main file could not be read or is not a composition at all), so
// that a checker can go on and report the problems of the rest with Check.
func ReadComposition(path string, lookupEnv func(string) (string, bool)) (*Composition, error) {
	return ParseComposition(path, nil, lookupEnv)
}

// ParseComposition parses composition YAML given as data, or read from file
// when data is nil; file names it in errors, and include patterns are
// relative to its directory.
//
// The main file is a map with the keys plugins, a list of entries with the
// keys id, name, config and disabled, and include, a list of files or
// globs in the file name (composition.d/*.yml), each holding a plugins list
// of its own. Entries are taken in order: the main file's, then each
// included file's (the files of one glob sorted by name); an id defined
// twice, in one file or two, is an error naming both places. Every string
// value is expanded: ${VAR} is replaced by the variable (an unset one is
// an error naming it), ${VAR:-default} by the variable or, when it is
// unset or empty, the default, and $${ is a literal ${. An unquoted value
// that is entirely an expansion is re-typed after expansion, so
// `port: ${PORT:-8080}` is a number. ParseComposition checks the files'
// shape only; Check validates the entries against the registered plugins.
// On error the composition holds what parsed, as for ReadComposition.
func ParseComposition(file string, data []byte, lookupEnv func(string) (string, bool)) (*Composition, error) {
	c, l := readComposition(file, data, lookupEnv)
	return c, errors.Join(l.errs...)
}

// yamlError turns "yaml: line 3: msg" into "file:3: invalid YAML: msg".
func yamlError(file string, err error) error {
	line, msg := yamlfield.ErrorLine(err)
	if line > 0 {
		return fmt.Errorf("%s:%d: invalid YAML: %s", file, line, msg)
	}
	return fmt.Errorf("%s: invalid YAML: %s", file, msg)
}

// parseEntry decodes one list item. It returns a nil entry when the item is
// unusable, and a partial one (for the duplicate-id check) with an error
// when only some of it is wrong.
func parseEntry(file string, n *yamlv3.Node, lookupEnv func(string) (string, bool)) (*Entry, error) {
	if n.Kind != yamlv3.MappingNode {
		return nil, fmt.Errorf("%s:%d: a plugins entry is a map with id, name and config", file, n.Line)
	}
	e := &Entry{File: file, Line: n.Line}
	var errs []error
	where := func(line int) string {
		if e.ID != "" {
			return fmt.Sprintf("%s:%d: entry %q", file, line, e.ID)
		}
		return fmt.Sprintf("%s:%d: entry", file, line)
	}
	// The id first, so that every later error can name it.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "id" {
			v := n.Content[i+1]
			if err := expandNode(v, lookupEnv); err != nil {
				return nil, fmt.Errorf("%s:%d: entry id: %w", file, v.Line, err)
			}
			e.ID = v.Value
			if v.Kind != yamlv3.ScalarNode || !entryID.MatchString(e.ID) {
				return nil, fmt.Errorf("%s:%d: entry id %q must match %s", file, v.Line, v.Value, entryID)
			}
		}
	}
	if e.ID == "" {
		errs = append(errs, fmt.Errorf("%s: has no id; give every entry a unique id", where(n.Line)))
	}
	var config *yamlv3.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := n.Content[i], n.Content[i+1]
		if seen[key.Value] {
			errs = append(errs, fmt.Errorf("%s: key %q appears twice", where(key.Line), key.Value))
			continue
		}
		seen[key.Value] = true
		if !slices.Contains(entryKeys, key.Value) {
			errs = append(errs, fmt.Errorf("%s: unknown key %q (an entry has %s)", where(key.Line), key.Value, strings.Join(entryKeys, ", ")))
			continue
		}
		if key.Value == "config" {
			config = v
			continue
		}
		if err := expandNode(v, lookupEnv); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", where(v.Line), key.Value, err))
			continue
		}
		switch key.Value {
		case "name":
			if v.Kind != yamlv3.ScalarNode || v.Value == "" {
				errs = append(errs, fmt.Errorf("%s: name must be a plugin name", where(v.Line)))
			}
			e.Name = v.Value
		case "disabled":
			if err := v.Decode(&e.Disabled); err != nil {
				errs = append(errs, fmt.Errorf("%s: disabled must be true or false", where(v.Line)))
			}
		}
	}
	if e.Name == "" && e.ID != "" {
		errs = append(errs, fmt.Errorf("%s: has no name; name the plugin it runs", where(n.Line)))
	}
	if config != nil && config.ShortTag() != "!!null" {
		if config.Kind != yamlv3.MappingNode {
			errs = append(errs, fmt.Errorf("%s: config must be a map of keys", where(config.Line)))
		} else {
			errs = append(errs, expandConfig(config, "", lookupEnv, func(line int) string { return where(line) })...)
			e.config = config
			if err := config.Decode(&e.Config); err != nil {
				line, msg := yamlfield.ErrorLine(err)
				if line == 0 {
					line = config.Line
				}
				errs = append(errs, fmt.Errorf("%s: config: %s", where(line), msg))
			}
			if len(e.Config) == 0 {
				e.Config = nil
			}
		}
	}
	return e, errors.Join(errs...)
}

// expandConfig expands every string scalar under n, reporting each failure
// with its line and dotted key path.
func expandConfig(n *yamlv3.Node, path string, lookupEnv func(string) (string, bool), where func(int) string) []error {
	var errs []error
	switch n.Kind {
	case yamlv3.ScalarNode:
		if err := expandNode(n, lookupEnv); err != nil {
			errs = append(errs, fmt.Errorf("%s: config key %s: %w", where(n.Line), path, err))
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, expandConfig(n.Content[i+1], joinKey(path, n.Content[i].Value), lookupEnv, where)...)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			errs = append(errs, expandConfig(c, path+"["+strconv.Itoa(i)+"]", lookupEnv, where)...)
		}
	case yamlv3.AliasNode:
		// An alias shares its anchor's node, which is expanded where it is
		// defined.
	}
	return errs
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// expandNode expands a string scalar in place. A plain (unquoted) scalar
// that contained an expansion gets its tag re-resolved, so numbers and
// booleans from the environment decode as such.
func expandNode(n *yamlv3.Node, lookupEnv func(string) (string, bool)) error {
	if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!str" || !strings.Contains(n.Value, "${") {
		return nil
	}
	v, err := expandEnv(n.Value, lookupEnv)
	if err != nil {
		return err
	}
	n.Value = v
	if n.Style == 0 {
		n.Tag = ""
	}
	return nil
}

// expandEnv replaces ${VAR} and ${VAR:-default} in s. $${ stays a literal ${.
func expandEnv(s string, lookupEnv func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated %q; close it with } or write $${ for a literal ${", s[i:])
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("invalid variable reference ${%s}; write ${NAME} or ${NAME:-default}", expr)
		}
		v, ok := lookupEnv(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set; set it or write ${%s:-default}", name, name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
