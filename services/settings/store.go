package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/internal/fsutil"
	"github.com/dsh-host/dsh-host/internal/yamledit"
	"github.com/dsh-host/dsh-host/internal/yamlfield"
)

// Store is the settings file. It is safe for concurrent use, and several
// processes may share one file.
type Store struct {
	path    string // the user file, the one written
	project string // the project file, read only; "" for none
	environ []string
	env     *envLayer // the overrides of environ
	logger  *slog.Logger

	mu sync.Mutex // serializes Update in this process; the lock file does across processes

	debounce time.Duration // how long Watch lets a burst of file events settle

	watchMu sync.Mutex
	hub     *hub // the directory watcher, while any Watch is active
}

// DefaultDebounce is how long Watch waits after the last file event before
// it reads the file: editors save in bursts (write, rename, chmod).
const DefaultDebounce = 100 * time.Millisecond

// Open returns the store of the settings file at path. The file need not
// exist: it reads as empty and the first Update creates it and its
// directory. A file that does not parse is logged here, reported by every
// Read and refused by every Update until it is fixed; Open itself does not
// fail on it, so that a fix made by hand is picked up without a restart.
//
// Options add the layers read over the file (WithProject, WithEnviron);
// an environment override that cannot be read fails Open, naming it.
func Open(path string, logger *slog.Logger, opts ...Option) (*Store, error) {
	if path == "" {
		return nil, errors.New("settings: no file given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("settings: resolve %s: %w", path, err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	st := &Store{path: abs, logger: logger, debounce: DefaultDebounce}
	for _, o := range opts {
		o(st)
	}
	if st.project, err = absProject(st.project); err != nil {
		return nil, err
	}
	if st.env, err = parseEnv(st.environ); err != nil {
		return nil, err
	}
	if _, err := st.snapshot(); err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			return nil, err
		}
		if pe.File == st.path {
			logger.Warn("the settings file does not parse; it will not be written until fixed", "err", err)
		} else {
			logger.Warn("the project settings file does not parse; settings are read without it failing until fixed", "err", err)
		}
	}
	return st, nil
}

// Path returns the settings file's path, absolute.
func (st *Store) Path() string { return st.path }

// ParseError reports a settings file that does not parse, or whose top level
// is not a mapping of section names. The file is left untouched.
type ParseError struct {
	File string
	Line int // 1-based; 0 when unknown
	Msg  string
}

func (e *ParseError) Error() string {
	where := e.File
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	return fmt.Sprintf("settings file %s: %s; fix the file by hand (it is not written while it does not parse)", where, e.Msg)
}

// parseError turns yaml's error into a ParseError on the line that holds the
// problem. yaml reports where the enclosing construct starts (a mapping
// begun two lines above a bad key) or no line at all; the problem's own line
// is the shortest prefix of the file, from that point on, that fails with
// the same message.
func parseError(file string, data []byte, err error) *ParseError {
	line, msg := yamlfield.ErrorLine(err)
	starts := yamledit.LineStarts(data)
	budget := problemSearchBudget
	for k := max(line, 1); k <= len(starts) && budget > 0; k++ {
		end := len(data)
		if k < len(starts) {
			end = starts[k]
		}
		budget -= end
		var n yaml.Node
		if perr := yaml.Unmarshal(data[:end], &n); perr != nil {
			if _, m := yamlfield.ErrorLine(perr); m == msg {
				line = k
				break
			}
		}
	}
	return &ParseError{File: file, Line: line, Msg: msg}
}

// problemSearchBudget bounds the bytes parseError parses again while it
// looks for the problem's line (a few milliseconds of work); beyond it,
// yaml's own line is reported.
const problemSearchBudget = 1 << 20

var sectionName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func checkSection(section string) error {
	if !sectionName.MatchString(section) {
		return fmt.Errorf("settings: section name %q must match %s", section, sectionName)
	}
	return nil
}

// file is a parsed settings file.
type file struct {
	name string
	data []byte
	doc  *yaml.Node // the document node; nil for an empty file
	top  *yaml.Node // the top-level mapping; nil when the file has none yet
}

// section returns the key and value nodes of name, or nils.
func (f *file) section(name string) (key, val *yaml.Node) {
	if f.top == nil {
		return nil, nil
	}
	for i := 0; i+1 < len(f.top.Content); i += 2 {
		if k := f.top.Content[i]; k.Kind == yaml.ScalarNode && k.Value == name {
			return k, f.top.Content[i+1]
		}
	}
	return nil, nil
}

// load reads and parses the file. A missing file is an empty one.
func (st *Store) load() (*file, []byte, error) {
	data, err := st.read()
	if errors.Is(err, fs.ErrNotExist) {
		return &file{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	f, err := parse(st.path, data)
	return f, data, err
}

// parse parses a settings file: one YAML document whose top level is a
// mapping with unique keys (or nothing at all).
func parse(name string, data []byte) (*file, error) {
	f := &file{name: name, data: data}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return f, nil // empty, or comments only
		}
		return nil, parseError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ParseError{File: name, Line: extra.Line, Msg: "a second YAML document; the settings file holds one"}
	} else if !errors.Is(err, io.EOF) {
		return nil, parseError(name, data, err)
	}
	f.doc = &doc
	if len(doc.Content) == 0 {
		return f, nil
	}
	top := doc.Content[0]
	switch {
	case top.Kind == yaml.MappingNode:
	case top.Kind == yaml.ScalarNode && top.ShortTag() == "!!null":
		return f, nil // "~" or "null": no sections yet
	default:
		return nil, &ParseError{File: name, Line: top.Line, Msg: "the top level must be a mapping of section names to values"}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k := top.Content[i]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		if first, dup := seen[k.Value]; dup {
			return nil, &ParseError{File: name, Line: k.Line, Msg: fmt.Sprintf("section %q appears twice (first on line %d)", k.Value, first)}
		}
		seen[k.Value] = k.Line
	}
	f.top = top
	return f, nil
}

// decodeSection decodes a section's value node into a T. A null value is
// the zero T.
func decodeSection[T any](path, section string, val *yaml.Node, v *T) error {
	if err := val.Decode(v); err != nil {
		line, msg := yamlfield.ErrorLine(err)
		if line == 0 {
			line = val.Line
		}
		return fmt.Errorf("settings file %s:%d: section %q: %s; fix it by hand", path, line, section, msg)
	}
	return nil
}

// Read decodes section, as the layers merge it (user file, project file,
// environment), into a T. ok is false when no layer has the section (v is
// then the zero T). A file that does not parse, the project's included,
// is an error naming it.
func Read[T any](st *Store, section string) (v T, ok bool, err error) {
	if err := checkSection(section); err != nil {
		return v, false, err
	}
	s, err := st.snapshot()
	if err != nil {
		return v, false, err
	}
	ok, err = readSection(s, section, &v)
	if err != nil {
		var zero T
		return zero, false, err
	}
	return v, ok, nil
}

// Update applies fn to the current value of section in the user file
// (re-read under the file lock) and writes the result atomically, keeping
// every other section and the file's comments. fn runs under the lock and
// must not call Update itself. If fn returns an error nothing is written.
// A file that
// does not parse, or a section that does not decode into a T, is refused
// and left as it is. An update that changes nothing writes nothing.
//
// The section is written as T encodes it, merged into what the file held:
// the section's comments stay where their keys remain, and keys that are
// no field of a struct in T (a newer version's, or the user's) are kept.
// Keys fn removes from a map, or fields it zeroes under omitempty, go.
//
// fn sees the user file's section alone, not the merged view Read gives:
// what it writes back is the user's own, and project or environment
// values are never copied into the user file. The project file is
// neither read nor written here.
func Update[T any](st *Store, section string, fn func(v *T) error) error {
	if err := checkSection(section); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := fsutil.MkdirAll(filepath.Dir(st.path), 0o700); err != nil {
		return fmt.Errorf("settings: create the directory of %s: %w", st.path, err)
	}
	unlock, err := fsutil.Lock(st.path + ".lock")
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	defer unlock()

	f, _, err := st.load()
	if err != nil {
		return err
	}
	out, changed, whole, err := apply(st.path, f, section, fn)
	if err != nil || !changed {
		return err
	}
	if whole {
		st.logger.Info("settings file re-encoded whole: its layout defeats a line-level update; values are kept, formatting may change",
			"file", st.path, "section", section)
	}
	perm := fs.FileMode(0o600)
	if fi, err := os.Stat(st.path); err == nil {
		perm = fi.Mode().Perm()
	}
	// Replacing a symlink would cut the user's link to wherever the file
	// really lives (a dotfiles repository): write the target instead, and
	// create it there when the link dangles.
	target, err := st.target()
	if err != nil {
		return err
	}
	if target != st.path {
		if _, err := os.Stat(filepath.Dir(target)); err != nil {
			return fmt.Errorf("settings: %s is a symlink to %s, whose directory cannot be used (%w); create the directory or fix the link", st.path, target, err)
		}
	}
	if err := fsutil.WriteFile(target, out, perm); err != nil {
		return fmt.Errorf("settings: write %s: %w", target, err)
	}
	return nil
}

// maxLinks bounds the symlinks target follows, as the kernel does (ELOOP).
const maxLinks = 40

// target returns the file the settings path leads to: the path itself, or
// where its symlinks point, the last one followed even when it dangles
// (the file is then to be created there).
func (st *Store) target() (string, error) {
	p := st.path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil // a missing file is created where p says
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("settings: follow the symlink %s: %w", p, err)
		}
		if !filepath.IsAbs(dest) {
			// Relative to the link's directory as the kernel sees it: a
			// lexical join would misread ".." behind a linked directory.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", fmt.Errorf("settings: follow the symlink %s: %w", p, err)
			}
			dest = filepath.Join(dir, dest)
		}
		p = dest
	}
	return "", fmt.Errorf("settings: %s: more than %d symlinks in a row (a loop?); fix the link", st.path, maxLinks)
}

// read returns the file's bytes; a missing file is fs.ErrNotExist as
// os.ReadFile reports it, and a directory where the file should be is
// named as such.
func (st *Store) read() ([]byte, error) {
	data, err := os.ReadFile(st.path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return data, err
	}
	if fi, serr := os.Stat(st.path); serr == nil && fi.IsDir() {
		return nil, fmt.Errorf("settings: %s is a directory, not a settings file; move it away or set the settings entry's file to a file path", st.path)
	}
	return nil, fmt.Errorf("settings: read %s: %w", st.path, err)
}

// apply runs fn on section of f and returns the file's new bytes, or
// changed false when there is nothing to write; whole reports a file
// re-encoded whole (see rewrite).
func apply[T any](path string, f *file, section string, fn func(v *T) error) (out []byte, changed, whole bool, err error) {
	var v T
	_, old := f.section(section)
	if old != nil {
		if err := decodeSection(path, section, old, &v); err != nil {
			return nil, false, false, err
		}
	}
	if err := fn(&v); err != nil {
		return nil, false, false, err
	}
	var nv yaml.Node
	if err := nv.Encode(v); err != nil {
		return nil, false, false, fmt.Errorf("settings: encode section %q: %w", section, err)
	}
	// The new value is merged into the old nodes, which carries the
	// section's comments and styles over and keeps keys T does not know.
	val := merge(old, &nv, reflect.TypeFor[T]())
	if old != nil && yamledit.SameValue(old, val) == nil {
		return nil, false, false, nil
	}
	out, whole, err = rewrite(f, section, val)
	if err != nil {
		return nil, false, false, fmt.Errorf("settings file %s: %w", path, err)
	}
	return out, true, whole, nil
}
