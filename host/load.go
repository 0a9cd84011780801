package host

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	yamlv3 "go.yaml.in/yaml/v3"
)

// A composition is layered: the main file, then each file its include list
// names, in order. Each layer's entries are appended to those before it,
// and an id defined twice is an error naming both places. A plain loop
// does this rather than a config-merging library: the layers are lists
// appended in order, not maps merged by key, and each entry keeps its
// parsed YAML node, whose lines every config error names.

// topKeys are the keys of the main composition file; an included file has
// only plugins.
var topKeys = []string{"plugins", "include"}

// loaded is one parsed entry and whether it had errors; one with errors
// is kept for the duplicate-id check only.
type loaded struct {
	e   *Entry
	bad bool
}

// loader reads one composition: its layers, their entries, and every
// problem found on the way.
type loader struct {
	lookupEnv func(string) (string, bool)
	entries   []loaded
	firstAt   map[string]*Entry // the first entry of each id
	errs      []error
	// sum covers the name and content of every file read, so a watcher
	// can tell an unchanged composition from a changed one.
	sum sha256hash
	// watch lists what a watcher must follow: the main file, and each
	// include pattern as an absolute path or glob.
	watch []string
}

type sha256hash = [sha256.Size]byte

// source is one file's bytes: read from disk, or given
// (ParseComposition).
type source struct {
	file string
	data []byte
	read bool // data is to be read from file
	// regular refuses a file that is not a regular file (an include): a
	// FIFO or a device would block the read, and with it every reload.
	// The main file is what the user named, which may be a pipe
	// (run -c <(...)).
	regular bool
}

// MaxCompositionSize is the largest composition file, main or included,
// that is read: 4 MiB, hundreds of times a large hand-written one. A
// bigger file is refused before it is read whole, so a file that is not
// a composition (a log, a disk image, /dev/zero) cannot take the host's
// memory.
const MaxCompositionSize = 4 << 20

func (s *source) bytes() ([]byte, error) {
	if s.read {
		data, err := readCapped(s.file, s.regular)
		if err != nil {
			return nil, err
		}
		s.data = data
	}
	if len(s.data) > MaxCompositionSize {
		return nil, tooLarge(s.file, int64(len(s.data)))
	}
	return s.data, nil
}

// readCapped reads file, refusing one over MaxCompositionSize: by its
// size when it has one, by reading no more than one byte past the cap
// when it has none (a pipe, a device) or grows meanwhile. It opens
// without blocking, which opening a FIFO nobody writes to would do, and
// with regular refuses anything but a regular file before reading it.
func readCapped(file string, regular bool) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read composition: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && regular && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); an included composition file must be one", file, fileKind(fi.Mode()))
	}
	if err == nil && fi.Size() > MaxCompositionSize {
		return nil, tooLarge(file, fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxCompositionSize+1))
	if err != nil {
		return nil, fmt.Errorf("read composition: %w", err)
	}
	if len(data) > MaxCompositionSize {
		return nil, tooLarge(file, -1)
	}
	return data, nil
}

// fileKind names what a file that is not a regular one is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

func tooLarge(file string, size int64) error {
	what := "more than"
	if size >= 0 {
		what = fmt.Sprintf("%d bytes, more than", size)
	}
	return fmt.Errorf("%s: %s the %d bytes (4 MiB) a composition file may hold; not read. Split it with include, or check that it is the file you meant", file, what, MaxCompositionSize)
}

// layer is what one file holds.
type layer struct {
	entries  []loaded
	includes []includeItem
}

// parseLayer parses one file: the document, its top-level keys and its
// entries. Problems that leave the rest usable are added to l.errs; an
// error returned means the file could not be used at all.
func (l *loader) parseLayer(file string, b []byte, main bool) (*layer, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(b, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	keys := topKeys
	if !main {
		keys = topKeys[:1]
	}
	top := map[string]*yamlv3.Node{}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if root.Kind != yamlv3.MappingNode {
			return nil, fmt.Errorf("%s:%d: a composition is a map with a \"plugins\" list", file, root.Line)
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			key := root.Content[i]
			switch {
			case top[key.Value] != nil:
				return nil, fmt.Errorf("%s:%d: key %q appears twice", file, key.Line, key.Value)
			case key.Value == "include" && !main:
				l.errs = append(l.errs, fmt.Errorf("%s:%d: include is read from the main composition file only; move it there", file, key.Line))
			case !slices.Contains(keys, key.Value):
				l.errs = append(l.errs, fmt.Errorf("%s:%d: unknown top-level key %q; a composition has %s", file, key.Line, key.Value, quoteAll(keys)))
			}
			top[key.Value] = root.Content[i+1]
		}
	}
	list := top["plugins"]
	if list == nil {
		// An empty file is what a watcher reads between an editor's
		// truncate and its write; taking it for "no instances" would stop
		// them all.
		return nil, fmt.Errorf("%s: no \"plugins\" list; write \"plugins: []\" for a file without instances", file)
	}
	out := &layer{}
	switch {
	case list.ShortTag() == "!!null":
	case list.Kind != yamlv3.SequenceNode:
		return nil, fmt.Errorf("%s:%d: plugins must be a list of entries (- id: ..., name: ...)", file, list.Line)
	default:
		for _, n := range list.Content {
			e, err := parseEntry(file, n, l.lookupEnv)
			if err != nil {
				l.errs = append(l.errs, err)
			}
			if e != nil {
				out.entries = append(out.entries, loaded{e: e, bad: err != nil})
			}
		}
	}
	if inc := top["include"]; main && inc != nil {
		patterns, err := includePatterns(file, inc)
		if err != nil {
			l.errs = append(l.errs, err)
		}
		out.includes = patterns
	}
	return out, nil
}

// includePatterns reads the include list: file paths or globs, relative to
// the main file's directory.
func includePatterns(file string, n *yamlv3.Node) ([]includeItem, error) {
	if n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yamlv3.SequenceNode {
		return nil, fmt.Errorf("%s:%d: include must be a list of files or globs, such as [composition.d/*.yml]", file, n.Line)
	}
	var out []includeItem
	var errs []error
	for _, item := range n.Content {
		if item.Kind != yamlv3.ScalarNode || item.ShortTag() != "!!str" || item.Value == "" {
			errs = append(errs, fmt.Errorf("%s:%d: include: each item is a file path or a glob", file, item.Line))
			continue
		}
		if _, err := filepath.Match(item.Value, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: include %q: %w", file, item.Line, item.Value, err))
			continue
		}
		if strings.ContainsAny(filepath.Dir(item.Value), `*?[`) {
			errs = append(errs, fmt.Errorf("%s:%d: include %q: a glob may stand only in the file name, not in a directory", file, item.Line, item.Value))
			continue
		}
		out = append(out, includeItem{Pattern: item.Value, Line: item.Line})
	}
	return out, errors.Join(errs...)
}

// includeItem is one item of the include list.
type includeItem struct {
	Pattern string
	Line    int
}

// add appends a layer's entries to those before it; an id already
// defined is an error naming both places.
func (l *loader) add(ly *layer) {
	for _, le := range ly.entries {
		e := le.e
		if e.ID != "" {
			if first := l.firstAt[e.ID]; first != nil {
				at := fmt.Sprintf("line %d", first.Line)
				if first.File != e.File {
					at = fmt.Sprintf("%s:%d", first.File, first.Line)
				}
				l.errs = append(l.errs, fmt.Errorf("%s:%d: entry %q: duplicate id (first at %s); ids must be unique", e.File, e.Line, e.ID, at))
				continue
			}
			l.firstAt[e.ID] = e
		}
		l.entries = append(l.entries, le)
	}
}

// load reads one layer into the loader. It returns nil when the file
// could not be used at all.
func (l *loader) load(src *source, main bool) *layer {
	data, err := src.bytes()
	var ly *layer
	if err == nil {
		ly, err = l.parseLayer(src.file, data, main)
	}
	h := sha256.New()
	h.Write(l.sum[:])
	h.Write([]byte(src.file))
	h.Write([]byte{0})
	h.Write(src.data)
	h.Sum(l.sum[:0])
	if err != nil {
		l.errs = append(l.errs, err)
		return nil
	}
	l.add(ly)
	return ly
}

// readComposition loads the main file (from data, or from disk when data
// is nil) and the files it includes. The composition holds the entries
// that parsed; it is nil when the main file is unusable.
func readComposition(file string, data []byte, lookupEnv func(string) (string, bool)) (*Composition, *loader) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	l := &loader{lookupEnv: lookupEnv, firstAt: map[string]*Entry{}}
	if abs, err := filepath.Abs(file); err == nil {
		l.watch = append(l.watch, abs)
		l.watch = append(l.watch, linkTargets(abs)...)
	}
	main := l.load(&source{file: file, data: data, read: data == nil}, true)
	if main == nil {
		return nil, l
	}
	seen := map[string]bool{filepath.Clean(file): true}
	for _, item := range main.includes {
		pattern := item.Pattern
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(filepath.Dir(file), pattern)
		}
		if abs, err := filepath.Abs(pattern); err == nil {
			l.watch = append(l.watch, abs)
		}
		matches, _ := filepath.Glob(pattern) // the pattern was checked
		if len(matches) == 0 && !strings.ContainsAny(filepath.Base(pattern), `*?[`) {
			l.errs = append(l.errs, fmt.Errorf("%s:%d: include %q: no such file", file, item.Line, item.Pattern))
		}
		for _, m := range matches {
			if seen[filepath.Clean(m)] {
				continue
			}
			seen[filepath.Clean(m)] = true
			if abs, err := filepath.Abs(m); err == nil {
				l.watch = append(l.watch, linkTargets(abs)...)
			}
			l.load(&source{file: m, read: true, regular: true}, false)
		}
	}
	c := &Composition{File: file}
	for _, le := range l.entries {
		if !le.bad {
			c.Entries = append(c.Entries, *le.e)
		}
	}
	return c, l
}

// maxLinks bounds the symlinks linkTargets follows, as the kernel does.
const maxLinks = 40

// linkTargets returns where the symlink abs leads: each link's target in
// turn, the last one the file that is read; nil when abs is no symlink.
// The usual dotfiles setup (composition.yml -> dotfiles/real.yml) is
// edited at the target, whose directory a watch of abs does not see; a
// link re-pointed is seen at abs, and the next read follows the new one.
func linkTargets(abs string) []string {
	var out []string
	p := abs
	for range maxLinks {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		dest, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(dest) {
			// Relative to the link's real directory, as the kernel reads
			// it: a lexical join would misread ".." after a linked one.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				break
			}
			dest = filepath.Join(dir, dest)
		}
		if slices.Contains(out, dest) {
			break // a loop: reading the file reports it
		}
		out = append(out, dest)
		p = dest
	}
	return out
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, " and ")
}
