package addserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/fsutil"
	"github.com/dsh-host/dsh-host/internal/yamledit"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// Remove takes the mcp-client entry whose id or serverName is name out of
// the composition file (or the included file that holds it), keeping
// every other byte, and returns the file changed. Its pins stay: a server
// added again under the name is held anew, or trusted anew with --trust.
//
// The entries are read from the files' text, not decoded: an entry the
// host refuses (an unknown key, a value of the wrong type) is exactly
// the one a person wants out. An id names an entry first, as everywhere;
// a serverName only when no id is name. A name two entries answer to is
// refused, naming both: remove does not guess.
func Remove(ctx context.Context, file, name string) (changed string, isRunning bool, err error) {
	unlock, err := lockComposition(file)
	if err != nil {
		return "", false, err
	}
	defer func() { _ = unlock() }()
	// Read as the host reads it, for the values of the entries it takes
	// (their ${VAR}s expanded); the text has the rest.
	c, err := host.ReadComposition(file, func(k string) (string, bool) {
		v, _ := os.LookupEnv(k)
		return v, true // only ids and names are read
	})
	if c == nil {
		return "", false, err
	}
	items, unread := compositionItems(c)
	var byID, byServerName []item
	var ids []string
	for _, it := range items {
		if it.plugin != mcpclient.PluginName {
			continue
		}
		if it.id != "" {
			ids = append(ids, it.id)
		}
		switch {
		case it.id == name:
			byID = append(byID, it)
		case it.serverName == name:
			byServerName = append(byServerName, it)
		}
	}
	var found item
	switch {
	case len(byID) > 1:
		return "", false, fmt.Errorf("the entries at %s all have the id %q (the host refuses the composition for it); nothing was removed: delete the one you mean by hand", places(byID), name)
	case len(byID) == 1:
		found = byID[0]
	case len(byServerName) > 1:
		return "", false, fmt.Errorf("the entries at %s all have the serverName %q; nothing was removed: remove the one you mean by its id", places(byServerName), name)
	case len(byServerName) == 1:
		found = byServerName[0]
	default:
		slices.Sort(ids)
		err := fmt.Errorf("%s has no MCP server %q (its servers: %s)", file, name, strings.Join(ids, ", "))
		if len(unread) > 0 {
			err = fmt.Errorf("%w; %s did not parse, so its entries were not looked at", err, strings.Join(unread, ", "))
		}
		return "", false, err
	}
	if err := found.remove(); err != nil {
		return "", false, err
	}
	return found.file, running(ctx, file), nil
}

// item is one entry of a plugins list as a file's text has it.
type item struct {
	file                   string
	f                      yamledit.File
	index                  int // in the plugins list
	line                   int
	id, plugin, serverName string
}

// places names where items are, for an error.
func places(items []item) string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprintf("%s:%d", it.file, it.line))
	}
	return strings.Join(out, " and ")
}

// compositionItems returns the plugins items of c's file and of the files
// its include list names, each with its id, plugin and serverName: as the
// host took them where it did (c.Entries), else as the text says, without
// decoding the entry's config. unread are the files whose YAML does not
// parse.
func compositionItems(c *host.Composition) (items []item, unread []string) {
	type at struct {
		file string
		line int
	}
	parsed := map[at]*host.Entry{}
	for i := range c.Entries {
		e := &c.Entries[i]
		parsed[at{e.File, e.Line}] = e
	}
	for _, file := range compositionFiles(c.File) {
		data, err := readText(file)
		if err != nil {
			unread = append(unread, file)
			continue
		}
		f, err := yamledit.Parse(data)
		if err != nil {
			unread = append(unread, file)
			continue
		}
		list := topValue(f, "plugins")
		if list == nil || list.Kind != yaml.SequenceNode {
			continue
		}
		// The host locates an entry by its line only: entries sharing one
		// (a flow list, [{...}, {...}]) are each read from their text.
		perLine := map[int]int{}
		for _, n := range list.Content {
			perLine[n.Line]++
		}
		for i, n := range list.Content {
			it := item{file: file, f: f, index: i, line: n.Line}
			if e := parsed[at{file, n.Line}]; e != nil && perLine[n.Line] == 1 {
				it.id, it.plugin = e.ID, e.Name
				it.serverName, _ = e.Config["serverName"].(string)
			} else {
				it.id, it.plugin = scalar(n, "id"), scalar(n, "name")
				if config := value(n, "config"); config != nil {
					it.serverName = scalar(config, "serverName")
				}
			}
			items = append(items, it)
		}
	}
	return items, unread
}

// readText reads a composition file's text as the host does (a regular
// file within host.MaxCompositionSize): an include glob may match a FIFO,
// which a plain open would wait on for a writer that never comes.
func readText(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", file)
	}
	data, err := io.ReadAll(io.LimitReader(f, host.MaxCompositionSize+1))
	if err == nil && len(data) > host.MaxCompositionSize {
		err = fmt.Errorf("%s is larger than %d bytes", file, host.MaxCompositionSize)
	}
	return data, err
}

// compositionFiles are file and the files its include list names, as the
// host finds them (host.ParseComposition): patterns relative to file's
// directory, each glob's files sorted, each file once.
func compositionFiles(file string) []string {
	files := []string{file}
	data, err := readText(file)
	if err != nil {
		return files
	}
	f, err := yamledit.Parse(data)
	if err != nil {
		return files
	}
	inc := topValue(f, "include")
	if inc == nil || inc.Kind != yaml.SequenceNode {
		return files
	}
	seen := map[string]bool{filepath.Clean(file): true}
	for _, n := range inc.Content {
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			continue
		}
		pattern := n.Value
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(filepath.Dir(file), pattern)
		}
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if !seen[filepath.Clean(m)] {
				seen[filepath.Clean(m)] = true
				files = append(files, m)
			}
		}
	}
	return files
}

// topValue is the value of the top-level key name of f, or nil.
func topValue(f yamledit.File, name string) *yaml.Node {
	if f.Doc == nil || len(f.Doc.Content) == 0 {
		return nil
	}
	return value(f.Doc.Content[0], name)
}

// value is the value of key in the mapping n (its first, if written
// twice), or nil.
func value(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for k := 0; k+1 < len(n.Content); k += 2 {
		if n.Content[k].Kind == yaml.ScalarNode && n.Content[k].Value == key {
			return n.Content[k+1]
		}
	}
	return nil
}

// scalar is the text of key's value in the mapping n when it is a
// scalar, else "".
func scalar(n *yaml.Node, key string) string {
	if v := value(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// remove takes it out of the plugins list of the file that holds it.
func (it item) remove() error {
	out, err := it.f.RemoveItem("plugins", it.index)
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was removed: delete the entry at line %d by hand", it.file, err, it.line)
	}
	return fsutil.Rewrite(target(it.file), out, 0o644)
}
