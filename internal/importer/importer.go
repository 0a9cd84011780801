// Package importer converts the server lists that Claude Code, Claude
// Desktop, Cursor, VS Code, Gemini CLI, opencode (JSON) and Codex (TOML)
// write into composition entries, and writes them into a composition (or
// a directory of them) keeping its comments. The conversion of each server
// is mcp-client's (mcpservers.Convert); this package finds the list, keeps
// secrets out, renders and writes, so that a front end only prints.
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/BurntSushi/toml"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/fsutil"
	"github.com/dsh-host/dsh-host/internal/yamledit"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/mcpservers"
)

// Import is the servers read from one client config.
type Import struct {
	// Source names the file they came from, in the comments written.
	Source string
	// Notes says what was skipped or changed, and why, one line each.
	Notes   []string
	servers []mcpservers.Imported
	// names are the servers' names in the client's file.
	names []string
}

// Parse reads the servers of an MCP client config, in file order; source
// names it in what is written.
func Parse(data []byte, source string) (*Import, error) {
	servers, names, notes, err := parseMCPServers(data)
	if err != nil {
		return nil, err
	}
	return &Import{Source: source, Notes: notes, servers: servers, names: names}, nil
}

// Len is the number of servers imported.
func (im *Import) Len() int { return len(im.servers) }

// IDs lists the entries' ids, comma-separated.
func (im *Import) IDs() string { return ids(im.servers) }

// YAML renders the servers as a composition: a plugins list that can be
// used as it is or pasted under an existing one, the skipped servers in a
// comment at the top.
func (im *Import) YAML() ([]byte, error) { return render(im.servers, im.Notes, importHead(im.Source)) }

// Append appends the servers to the plugins list of the composition at
// path, keeping every other byte of it. An id or serverName already in the
// composition is refused, and nothing is written. A missing file is
// created.
func (im *Import) Append(path string) error {
	return appendEntries(path, im.servers, importHead(im.Source), nil)
}

// importHead is the comment above what import writes.
func importHead(source string) string { return "Imported from " + source + " by dsh-host import." }

// WriteDir writes each server to dir/<id>.yml, for the include key of the
// composition at compFile, and returns the files' paths. An id or
// serverName used by compFile or a file already in dir, or a file that
// exists, is refused, and nothing is written.
func (im *Import) WriteDir(dir, compFile string) ([]string, error) {
	return writeDir(dir, compFile, im.servers, im.Source)
}

// An imported server's entry id is its serverName.
func ids(servers []mcpservers.Imported) string {
	var s []string
	for _, sv := range servers {
		s = append(s, sv.Config.ServerName)
	}
	return strings.Join(s, ", ")
}

// parseMCPServers reads the servers of an MCP client config, in file order.
// notes says what was skipped or changed, and why.
func parseMCPServers(data []byte) (servers []mcpservers.Imported, names, notes []string, err error) {
	list, convert, err := serverList(data)
	if err != nil {
		return nil, nil, nil, err
	}
	// A built-in service's id in the composition configures that service:
	// an mcp-client entry under it would replace the service, and Check
	// cannot tell that from a mistake.
	taken := map[string]bool{}
	for _, p := range host.Plugins() {
		if p.Builtin {
			taken[p.Name] = true
		}
	}
	for _, e := range list {
		imp, err := convert(e.name, e.value, func(s string) bool { return taken[s] })
		if err != nil {
			notes = append(notes, fmt.Sprintf("skipped %q: %v", e.name, err))
			continue
		}
		taken[imp.Config.ServerName] = true
		servers = append(servers, imp)
		names = append(names, e.name)
	}
	// After the conversion: a secret's variable may be named after its
	// server, and its note goes with the server's.
	secrets := mcpservers.MoveSecrets(servers)
	for i, imp := range servers {
		for _, n := range imp.Notes {
			notes = append(notes, fmt.Sprintf("%s: %s", names[i], n))
		}
	}
	if len(secrets) > 0 {
		notes = append(notes, exportNote(secrets))
	}
	return servers, names, notes, nil
}

// exportNote tells which variables to set for the secrets import kept out
// of the composition, as shell lines with their values.
func exportNote(secrets []mcpservers.Secret) string {
	var b strings.Builder
	b.WriteString("inline secrets are not written into the composition, which refers to them as ${VAR}; set these where dsh-host runs:")
	seen := map[string]bool{}
	for _, sc := range secrets {
		if seen[sc.Var] {
			continue
		}
		seen[sc.Var] = true
		fmt.Fprintf(&b, "\n  export %s=%s", sc.Var, shellQuote(sc.Value))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// rawServer is one server of a client config, as decoded, under the name
// the client gives it.
type rawServer struct {
	name  string
	value any
}

// converter converts one server of a client config.
type converter func(name string, entry any, taken func(string) bool) (mcpservers.Imported, error)

// serverList finds the server list of a client config: JSON (mcpServers,
// servers, mcp.servers, or opencode's mcp) or Codex's TOML (mcp_servers),
// in file order, and the conversion its entries need.
func serverList(data []byte) ([]rawServer, converter, error) {
	top, jsonErr := orderedObject(data)
	if jsonErr != nil {
		if list, ok, err := codexServers(data); ok || err == nil {
			return list, mcpservers.ConvertCodex, err
		}
		return nil, nil, fmt.Errorf("neither a JSON object (%v) nor TOML with [mcp_servers] tables (Codex's config.toml)", jsonErr)
	}
	var list, openCode json.RawMessage
	for _, f := range top {
		switch f.key {
		case "mcpServers", "servers": // Claude, Cursor, Gemini CLI; VS Code
			list = f.raw
		case "mcp": // VS Code settings.json: {"mcp": {"servers": {...}}}; opencode.json: {"mcp": {...}}
			inner, _ := orderedObject(f.raw)
			openCode = f.raw
			for _, g := range inner {
				if g.key == "servers" {
					list, openCode = g.raw, nil
				}
			}
		}
		if list != nil {
			break
		}
	}
	convert := converter(mcpservers.Convert)
	if list == nil && openCode != nil {
		list, convert = openCode, mcpservers.ConvertOpenCode
	}
	if list == nil {
		return nil, nil, errors.New(`found no "mcpServers" (Claude Code, Claude Desktop, Cursor, Gemini CLI), "servers" (VS Code) or "mcp" (opencode) object`)
	}
	entries, err := orderedObject(list)
	if err != nil {
		return nil, nil, fmt.Errorf("the server list is not a JSON object: %w", err)
	}
	out := make([]rawServer, 0, len(entries))
	for _, e := range entries {
		dec := json.NewDecoder(bytes.NewReader(e.raw))
		dec.UseNumber() // numbers keep their text
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.key, err)
		}
		out = append(out, rawServer{name: e.key, value: v})
	}
	return out, convert, nil
}

// codexServers reads the [mcp_servers.NAME] tables of Codex's config.toml
// in file order. ok is false when data is not TOML; err, when not nil,
// says what is wrong with TOML that has no server.
func codexServers(data []byte) (list []rawServer, ok bool, err error) {
	var doc map[string]any
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		return nil, false, err
	}
	servers, _ := doc["mcp_servers"].(map[string]any)
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == "mcp_servers" {
			list = append(list, rawServer{name: k[1], value: servers[k[1]]})
		}
	}
	if len(servers) > 0 && len(list) < len(servers) {
		// Servers written as inline tables (mcp_servers = {a = {...}})
		// have no keys of their own: take them sorted.
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			if !slices.ContainsFunc(list, func(r rawServer) bool { return r.name == name }) {
				list = append(list, rawServer{name: name, value: servers[name]})
			}
		}
	}
	if len(list) == 0 {
		return nil, true, errors.New("found no [mcp_servers.NAME] table (Codex's config.toml)")
	}
	return list, true, nil
}

// member is one member of a JSON object, in file order.
type member struct {
	key string
	raw json.RawMessage
}

// orderedObject decodes a JSON object keeping its members' order, which
// encoding/json's maps lose: servers are imported in the file's order.
func orderedObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("want a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{key, raw})
	}
	return out, nil
}

// entry is a composition entry as import writes it.
type entry struct {
	ID       string     `yaml:"id"`
	Name     string     `yaml:"name"`
	Disabled bool       `yaml:"disabled,omitempty"`
	Config   *yaml.Node `yaml:"config"`
}

// entryNode renders s as a composition entry, its notes as the head
// comment.
func entryNode(s mcpservers.Imported) (*yaml.Node, error) {
	cfg, err := minimal(s.Config, mcpclient.Defaults())
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := n.Encode(entry{ID: s.Config.ServerName, Name: mcpclient.PluginName, Disabled: s.Disabled, Config: cfg}); err != nil {
		return nil, err
	}
	n.HeadComment = strings.Join(s.Notes, "\n")
	return &n, nil
}

// minimal is v without what equals def (yamledit.Minimal).
func minimal(v, def any) (*yaml.Node, error) { return yamledit.Minimal(v, def) }

func nodes(servers []mcpservers.Imported) ([]*yaml.Node, error) {
	var out []*yaml.Node
	for _, s := range servers {
		n, err := entryNode(s)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", s.Config.ServerName, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// render renders servers as a composition: a plugins list that can be used
// as it is, or pasted under an existing one, under the comment head.
// Skipped servers are listed in that comment too.
func render(servers []mcpservers.Imported, notes []string, head string) ([]byte, error) {
	items, err := nodes(servers)
	if err != nil {
		return nil, err
	}
	// Built by hand: Node.Encode of a value holding the items would drop
	// their comments.
	top := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "plugins"},
		{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items},
	}}
	lines := []string{head}
	for _, n := range notes {
		if strings.HasPrefix(n, "skipped ") {
			lines = append(lines, n)
		}
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{top}, HeadComment: strings.Join(lines, "\n")}
	return yamledit.Encode(doc, 2)
}

// appendEntries appends servers to the plugins list of the composition at
// path, keeping every other byte of it (and so its comments), the first
// under the comment head. An id or serverName already in the composition
// is refused, and nothing is written. A missing file is created. check,
// when not nil, is given the file's new content first: an error from it
// leaves the file as it was.
func appendEntries(path string, servers []mcpservers.Imported, head string, check func([]byte) error) error {
	orig, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		out, err := render(servers, nil, head)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(out); err != nil {
				return err
			}
		}
		if err := fsutil.Unchanged(path, nil, false, changedWhile); err != nil {
			return err
		}
		return fsutil.WriteFile(path, out, 0o644)
	}
	if err != nil {
		return err
	}
	out, err := appended(path, orig, servers, head)
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(out); err != nil {
			return err
		}
	}
	if err := fsutil.Unchanged(path, orig, true, changedWhile); err != nil {
		return err
	}
	return fsutil.Rewrite(path, out, 0o644)
}

// changedWhile is the refusal's when, for a composition someone saved
// while its new content was made and checked.
const changedWhile = "while it was being appended to (saved by an editor?)"

// appended returns orig, the composition at path, with servers appended
// to its plugins list, the first under the comment head, or an error when
// an id or serverName is taken.
func appended(path string, orig []byte, servers []mcpservers.Imported, head string) ([]byte, error) {
	f, err := yamledit.Parse(orig)
	if err != nil {
		return nil, fmt.Errorf("%s does not parse, so nothing is appended: %w", path, err)
	}
	// The bytes just read, not the file again: it is read once.
	used := map[string]string{}
	if err := usedIn(used, path, orig); err != nil {
		return nil, err
	}
	if err := refuseUsed(servers, used, nil); err != nil {
		return nil, err
	}
	items, err := nodes(servers)
	if err != nil {
		return nil, err
	}
	items[0].HeadComment = strings.TrimSpace(head + "\n" + items[0].HeadComment)
	out, err := f.Append("plugins", items)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was written: paste the output of dsh-host import instead", path, err)
	}
	return out, nil
}

// writeDir writes each server to dir/<id>.yml, a composition of its own
// meant for the include key of the composition at compFile, and returns
// the files' paths. An id or serverName used by compFile or by a file
// already in dir, or a file that exists, is refused, and nothing is
// written.
func writeDir(dir, compFile string, servers []mcpservers.Imported, source string) ([]string, error) {
	// The files in dir count even before the composition includes them.
	existing, _ := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	used, err := usedNames(append([]string{compFile}, existing...)...)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, s := range servers {
		files = append(files, filepath.Join(dir, s.Config.ServerName+".yml"))
	}
	if err := refuseUsed(servers, used, files); err != nil {
		return nil, err
	}
	out := make([][]byte, len(servers))
	for i, s := range servers {
		var err error
		if out[i], err = render([]mcpservers.Imported{s}, nil, importHead(source)); err != nil {
			return nil, err
		}
	}
	if err := fsutil.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for i, p := range files {
		if err := fsutil.WriteFile(p, out[i], 0o644); err != nil {
			for _, q := range files[:i] {
				os.Remove(q) // all or nothing
			}
			return nil, err
		}
	}
	return files, nil
}

// usedNames returns the ids and mcp-client serverNames the compositions in
// files use, their included files' too, each with where it is
// ("file:line"). A missing file uses nothing.
func usedNames(files ...string) (map[string]string, error) {
	used := map[string]string{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := usedIn(used, file, data); err != nil {
			return nil, err
		}
	}
	return used, nil
}

// usedIn adds to used the ids and mcp-client serverNames of the
// composition file whose content is data, and of the files it includes.
// One with no plugins list uses nothing; one that is not YAML, or whose
// mcp-client entry does not decode as run decodes it (a misspelt key),
// is an error, as it may hide a name.
func usedIn(used map[string]string, file string, data []byte) error {
	if _, err := yamledit.Parse(data); err != nil {
		return fmt.Errorf("%s does not parse, so its ids are unknown and nothing is written: %w", file, err)
	}
	// Only ids and names are read: a variable unset here is no reason to
	// stop, and is read as empty.
	var unset []string
	lookupEnv := func(name string) (string, bool) {
		v, ok := os.LookupEnv(name)
		if !ok && !slices.Contains(unset, name) {
			unset = append(unset, name)
		}
		return v, true
	}
	c, _ := host.ParseComposition(file, data, lookupEnv)
	if c == nil {
		return nil // its shape is for the writer, or the host, to report
	}
	var errs []error
	for i := range c.Entries {
		e := &c.Entries[i]
		where := fmt.Sprintf("%s:%d", e.File, e.Line)
		used[e.ID] = where
		if e.Name != mcpclient.PluginName {
			continue
		}
		cfg, err := host.Decode[mcpclient.Config](e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if name := cfg.ServerName; name != "" {
			used[name] = where
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := fmt.Errorf("the serverNames of %s are unknown, so nothing is written: fix its entries (dsh-host check -c %s):\n%w", file, file, errors.Join(errs...))
	if len(unset) > 0 {
		err = fmt.Errorf("%w\n(read as empty, as not set here: %s)", err, strings.Join(unset, ", "))
	}
	return err
}

// refuseUsed fails when a server's id is in used, or its file (when files
// is not nil) exists.
func refuseUsed(servers []mcpservers.Imported, used map[string]string, files []string) error {
	var errs []error
	for i, s := range servers {
		if files != nil {
			if _, err := os.Lstat(files[i]); err == nil {
				errs = append(errs, fmt.Errorf("%s exists; remove it or rename the server in the imported file", files[i]))
				continue
			}
		}
		if where, dup := used[s.Config.ServerName]; dup {
			errs = append(errs, fmt.Errorf("%s: %q is already there (as an id or serverName); remove it or rename the server in the imported file", where, s.Config.ServerName))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nothing was written:\n%w", errors.Join(errs...))
	}
	return nil
}

// AppendServers appends servers converted elsewhere (dsh-host add) to the
// composition at path as Append does, the first under the comment head,
// after check accepted the file's new content; an id or serverName in use,
// or an error from check, leaves the file as it was.
func AppendServers(path string, servers []mcpservers.Imported, head string, check func([]byte) error) error {
	return appendEntries(path, servers, head, check)
}
