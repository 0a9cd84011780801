package main

// `dsh-host import`: convert the mcpServers JSON that Claude Code, Claude
// Desktop, Cursor and VS Code write into composition entries.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

func cmdImport(ctx context.Context, args []string, io Stdio) int {
	fs := flagSet("import", "<file|-> [--write] [-c FILE]", `
Import reads an MCP client's server list and prints the equivalent composition
entries (YAML) on stdout. It understands the mcpServers object of Claude
Code's .mcp.json, claude_desktop_config.json and Cursor's mcp.json (command,
args, env, cwd; or url, headers, type), and the servers object of VS Code's
.vscode/mcp.json (and of the "mcp" key of its settings.json). ${env:VAR} and
${input:NAME} become ${VAR} and ${NAME}. SSE servers are skipped with a note:
dsh-host speaks stdio and Streamable HTTP.

With --write the entries are appended to the composition named by -c, keeping
its comments; an id that is already there is refused and nothing is written.`)
	file := fs.String("c", "composition.yml", "composition `file` that --write appends to")
	write := fs.Bool("write", false, "append the entries to the composition instead of printing them")
	pos, code, ok := parseArgs(fs, args, io)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, io, "want one file to import (- for stdin)")
	}
	var data []byte
	var err error
	if pos[0] == "-" {
		data, err = readAll(io.In)
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return fail(io, "import", err)
	}
	servers, notes, err := parseMCPServers(data)
	if err != nil {
		return fail(io, "import", fmt.Errorf("%s: %w", pos[0], err))
	}
	for _, n := range notes {
		fmt.Fprintf(io.Err, "note: %s\n", n)
	}
	if len(servers) == 0 {
		return fail(io, "import", fmt.Errorf("%s: no server could be imported", pos[0]))
	}
	if !*write {
		out, err := renderEntries(servers, notes, filepath.Base(pos[0]))
		if err != nil {
			return fail(io, "import", err)
		}
		io.Out.Write(out)
		return exitOK
	}
	n, err := appendEntries(*file, servers, filepath.Base(pos[0]))
	if err != nil {
		return fail(io, "import", err)
	}
	fmt.Fprintf(io.Out, "%s: appended %d entries (%s); check it with: dsh-host check -c %s\n", *file, n, ids(servers), *file)
	return exitOK
}

func readAll(r io.Reader) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// importedServer is one server of an MCP client's config, as an mcp-client
// entry.
type importedServer struct {
	id        string // also the serverName
	source    string // its key in the imported file
	transport string // "stdio" or "streamable-http"
	command   string
	args      []string
	env       []kv
	cwd       string
	url       string
	headers   []kv
	disabled  bool
	notes     []string
}

type kv struct{ key, value string }

func ids(servers []importedServer) string {
	var s []string
	for _, sv := range servers {
		s = append(s, sv.id)
	}
	return strings.Join(s, ", ")
}

// parseMCPServers reads the servers of an MCP client config, in file order.
// notes says what was skipped or changed, and why.
func parseMCPServers(data []byte) (servers []importedServer, notes []string, err error) {
	top, err := orderedObject(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	var list json.RawMessage
	for _, f := range top {
		switch f.key {
		case "mcpServers", "servers": // Claude, Cursor; VS Code
			list = f.raw
		case "mcp": // VS Code settings.json: {"mcp": {"servers": {...}}}
			inner, err := orderedObject(f.raw)
			if err != nil {
				continue
			}
			for _, g := range inner {
				if g.key == "servers" {
					list = g.raw
				}
			}
		}
		if list != nil {
			break
		}
	}
	if list == nil {
		return nil, nil, errors.New(`found no "mcpServers" (Claude Code, Claude Desktop, Cursor) or "servers" (VS Code) object`)
	}
	entries, err := orderedObject(list)
	if err != nil {
		return nil, nil, fmt.Errorf("the server list is not a JSON object: %w", err)
	}
	taken := map[string]bool{}
	for _, e := range entries {
		sv, skip := convertServer(e.key, e.raw)
		if skip != "" {
			notes = append(notes, fmt.Sprintf("skipped %q: %s", e.key, skip))
			continue
		}
		sv.id = uniqueID(sanitizeID(e.key), taken)
		if sv.id != e.key {
			sv.notes = append(sv.notes, fmt.Sprintf("%q is renamed %q: ids and serverNames match ^[A-Za-z0-9_-]{1,32}$", e.key, sv.id))
		}
		notes = append(notes, prefixed(e.key, sv.notes)...)
		servers = append(servers, sv)
	}
	return servers, notes, nil
}

func prefixed(name string, notes []string) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = fmt.Sprintf("%s: %s", name, n)
	}
	return out
}

// convertServer converts one server; skip, when not empty, says why it
// cannot be imported.
func convertServer(name string, raw json.RawMessage) (sv importedServer, skip string) {
	fields, err := orderedObject(raw)
	if err != nil {
		return sv, "not a JSON object"
	}
	sv.source = name
	var typ string
	for _, f := range fields {
		var err error
		switch f.key {
		case "type", "transport":
			err = json.Unmarshal(f.raw, &typ)
		case "command":
			err = json.Unmarshal(f.raw, &sv.command)
		case "args":
			err = json.Unmarshal(f.raw, &sv.args)
		case "env":
			sv.env, err = stringMap(f.raw)
		case "cwd":
			err = json.Unmarshal(f.raw, &sv.cwd)
		case "url", "serverUrl":
			err = json.Unmarshal(f.raw, &sv.url)
		case "headers":
			sv.headers, err = stringMap(f.raw)
		case "disabled":
			err = json.Unmarshal(f.raw, &sv.disabled)
		case "envFile":
			sv.notes = append(sv.notes, "envFile is not supported: put those variables in the environment of dsh-host, or in env")
		default:
			sv.notes = append(sv.notes, fmt.Sprintf("key %q has no equivalent and is ignored", f.key))
		}
		if err != nil {
			return sv, fmt.Sprintf("%s: %v", f.key, err)
		}
	}
	switch strings.ToLower(typ) {
	case "sse":
		return sv, "SSE transport is not supported (dsh-host speaks stdio and Streamable HTTP); if the server also serves Streamable HTTP (often at /mcp), add it with transport: streamable-http"
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		sv.transport = "streamable-http"
	case "stdio":
		sv.transport = "stdio"
	case "":
		switch {
		case sv.command != "":
			sv.transport = "stdio"
		case sv.url != "":
			sv.transport = "streamable-http"
			if strings.HasSuffix(strings.TrimRight(sv.url, "/"), "/sse") {
				sv.notes = append(sv.notes, "the url ends in /sse, which usually means an SSE server; it is imported as Streamable HTTP and will fail to connect if it speaks only SSE")
			}
		}
	default:
		return sv, fmt.Sprintf("unknown type %q", typ)
	}
	switch sv.transport {
	case "stdio":
		if sv.command == "" {
			return sv, "stdio server without a command"
		}
		if sv.url != "" || len(sv.headers) > 0 {
			sv.notes = append(sv.notes, "url and headers are ignored for a stdio server")
			sv.url, sv.headers = "", nil
		}
	case "streamable-http":
		if sv.url == "" {
			return sv, "HTTP server without a url"
		}
		if sv.command != "" || len(sv.args) > 0 || len(sv.env) > 0 || sv.cwd != "" {
			sv.notes = append(sv.notes, "command, args, env and cwd are ignored for an HTTP server")
			sv.command, sv.args, sv.env, sv.cwd = "", nil, nil, ""
		}
	default:
		return sv, "neither a command (stdio) nor a url (HTTP)"
	}
	sv.command = sv.convertVars(sv.command)
	sv.cwd = sv.convertVars(sv.cwd)
	sv.url = sv.convertVars(sv.url)
	for i := range sv.args {
		sv.args[i] = sv.convertVars(sv.args[i])
	}
	for i := range sv.env {
		sv.env[i].value = sv.convertVars(sv.env[i].value)
	}
	for i := range sv.headers {
		sv.headers[i].value = sv.convertVars(sv.headers[i].value)
	}
	return sv, ""
}

// vscodeVar matches VS Code's ${env:VAR}, ${input:id} and ${workspaceFolder}
// style variables (a colon, or a name the composition cannot expand).
var vscodeVar = regexp.MustCompile(`\$\{(env|input):([^}]+)\}|\$\{(workspaceFolder|workspaceFolderBasename|userHome|pathSeparator)\}`)

// convertVars rewrites VS Code variables into the composition's ${VAR}
// syntax; ${VAR} and ${VAR:-default} (Claude Code) pass through unchanged.
func (sv *importedServer) convertVars(s string) string {
	return vscodeVar.ReplaceAllStringFunc(s, func(m string) string {
		sub := vscodeVar.FindStringSubmatch(m)
		switch {
		case sub[1] == "env":
			return "${" + sub[2] + "}"
		case sub[1] == "input":
			name := envName(sub[2])
			sv.notes = append(sv.notes, fmt.Sprintf("VS Code prompts for input %q; here it is the environment variable %s", sub[2], name))
			return "${" + name + "}"
		case sub[3] == "userHome":
			return "${HOME}"
		default:
			name := envName(sub[3])
			sv.notes = append(sv.notes, fmt.Sprintf("${%s} is the environment variable %s here (default: the current directory)", sub[3], name))
			return "${" + name + ":-.}"
		}
	})
}

// envName turns "api-key" or "workspaceFolder" into API_KEY or
// WORKSPACE_FOLDER.
func envName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

var notIDChar = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// sanitizeID maps a server name onto ^[A-Za-z0-9_-]{1,32}$.
func sanitizeID(name string) string {
	id := strings.Trim(notIDChar.ReplaceAllString(name, "_"), "_")
	if len(id) > 32 {
		id = id[:32]
	}
	if id == "" {
		id = "server"
	}
	return id
}

// uniqueID returns id, or id with a numeric suffix, not in taken; it marks
// the result taken.
func uniqueID(id string, taken map[string]bool) string {
	out := id
	for n := 2; taken[out]; n++ {
		suffix := "_" + strconv.Itoa(n)
		base := id
		if len(base)+len(suffix) > 32 {
			base = base[:32-len(suffix)]
		}
		out = base + suffix
	}
	taken[out] = true
	return out
}

// field is one member of a JSON object, in file order.
type field struct {
	key string
	raw json.RawMessage
}

// orderedObject decodes a JSON object keeping its members' order, which
// encoding/json's maps lose.
func orderedObject(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("want a JSON object")
	}
	var out []field
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
		out = append(out, field{key, raw})
	}
	return out, nil
}

// stringMap decodes a JSON object of scalars, in order; numbers and booleans
// become their text.
func stringMap(raw json.RawMessage) ([]kv, error) {
	fields, err := orderedObject(raw)
	if err != nil {
		return nil, err
	}
	out := make([]kv, 0, len(fields))
	for _, f := range fields {
		var v any
		if err := json.Unmarshal(f.raw, &v); err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case string:
			out = append(out, kv{f.key, v})
		case float64, bool:
			out = append(out, kv{f.key, strings.TrimSpace(string(f.raw))})
		case nil:
			out = append(out, kv{f.key, ""})
		default:
			return nil, fmt.Errorf("%s: want a string", f.key)
		}
	}
	return out, nil
}

// entryNode renders sv as a composition entry.
func (sv importedServer) entryNode() *yaml.Node {
	m := mapping()
	add(m, "id", str(sv.id))
	add(m, "name", str("mcp-client"))
	if sv.disabled {
		add(m, "disabled", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	cfg := mapping()
	add(cfg, "serverName", str(sv.id))
	add(cfg, "transport", str(sv.transport))
	if sv.transport == "stdio" {
		add(cfg, "command", str(sv.command))
		if len(sv.args) > 0 {
			seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
			for _, a := range sv.args {
				seq.Content = append(seq.Content, str(a))
			}
			add(cfg, "args", seq)
		}
		if len(sv.env) > 0 {
			add(cfg, "env", kvNode(sv.env))
		}
		if sv.cwd != "" {
			add(cfg, "cwd", str(sv.cwd))
		}
	} else {
		add(cfg, "url", str(sv.url))
		if len(sv.headers) > 0 {
			add(cfg, "headers", kvNode(sv.headers))
		}
	}
	add(m, "config", cfg)
	if len(sv.notes) > 0 {
		m.HeadComment = strings.Join(sv.notes, "\n")
	}
	return m
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func add(m *yaml.Node, key string, v *yaml.Node) { m.Content = append(m.Content, str(key), v) }

func kvNode(kvs []kv) *yaml.Node {
	m := mapping()
	for _, p := range kvs {
		add(m, p.key, str(p.value))
	}
	return m
}

// renderEntries renders servers as a composition: a plugins list that can be
// used as it is, or pasted under an existing one. Skipped servers are listed
// in a comment at the top.
func renderEntries(servers []importedServer, notes []string, source string) ([]byte, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, sv := range servers {
		seq.Content = append(seq.Content, sv.entryNode())
	}
	top := mapping()
	add(top, "plugins", seq)
	head := []string{"Imported from " + source + " by dsh-host import."}
	for _, n := range notes {
		if strings.HasPrefix(n, "skipped ") {
			head = append(head, n)
		}
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{top}, HeadComment: strings.Join(head, "\n")}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render the entries: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// appendEntries appends servers to the composition at path, keeping the
// file's text (and so its comments) as it is, and returns how many it added.
// An id or serverName already in the composition is refused, and nothing is
// written. A missing file is created.
func appendEntries(path string, servers []importedServer, source string) (int, error) {
	orig, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		out, err := renderEntries(servers, nil, source)
		if err != nil {
			return 0, err
		}
		return len(servers), fsutil.WriteFile(path, out, 0o644)
	}
	if err != nil {
		return 0, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(orig, &doc); err != nil {
		return 0, fmt.Errorf("%s does not parse, so nothing is appended: %w", path, err)
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root != nil && root.Kind != yaml.MappingNode {
		return 0, fmt.Errorf("%s: the top level is not a mapping with a plugins list", path)
	}
	var key, list, next *yaml.Node
	if root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "plugins" {
				key, list = root.Content[i], root.Content[i+1]
				if i+2 < len(root.Content) {
					next = root.Content[i+2]
				}
			}
		}
	}
	if list != nil && list.Kind == yaml.SequenceNode {
		if err := refuseDuplicates(path, list, servers); err != nil {
			return 0, err
		}
	} else if list != nil && !(list.Kind == yaml.ScalarNode && list.Tag == "!!null") {
		return 0, fmt.Errorf("%s:%d: plugins is not a list", path, list.Line)
	}

	rendered, err := renderEntries(servers, nil, source)
	if err != nil {
		return 0, err
	}
	// The rendered items, without the header comment and "plugins:" line,
	// indented by two spaces under it.
	items := rendered[bytes.Index(rendered, []byte("\nplugins:\n"))+len("\nplugins:\n"):]
	lines := strings.SplitAfter(string(orig), "\n")
	if len(orig) > 0 && !bytes.HasSuffix(orig, []byte("\n")) {
		lines[len(lines)-1] += "\n"
	}
	var at int // the line index the new items go before
	var indent string
	switch {
	case list == nil:
		// No plugins key: add one at the end.
		lines = append(lines, "plugins:\n")
		at, indent = len(lines), "  "
	case list.Kind != yaml.SequenceNode || len(list.Content) == 0:
		// "plugins:" with nothing under it.
		at, indent = key.Line, "  "
	case list.Style&yaml.FlowStyle != 0:
		return 0, fmt.Errorf("%s:%d: plugins is a flow list ([...]); write it as a block list to append to it", path, list.Line)
	default:
		first := lines[list.Content[0].Line-1]
		dash := strings.Index(first, "-")
		if dash < 0 {
			return 0, fmt.Errorf("%s:%d: cannot find the list item's dash", path, list.Content[0].Line)
		}
		indent = first[:dash]
		at = len(lines)
		if next != nil {
			// Before the next top-level key, and before the comments and
			// blank lines that lead into it.
			at = next.Line - 1
			for at > 0 && (strings.TrimSpace(lines[at-1]) == "" || strings.HasPrefix(lines[at-1], "#")) {
				at--
			}
		} else {
			for at > 0 && strings.TrimSpace(lines[at-1]) == "" {
				at--
			}
		}
	}
	var block strings.Builder
	fmt.Fprintf(&block, "%s# Imported from %s by dsh-host import.\n", indent, source)
	for _, l := range strings.SplitAfter(string(items), "\n") {
		if l == "" {
			continue
		}
		block.WriteString(indent + strings.TrimPrefix(l, "  "))
	}
	out := strings.Join(lines[:at], "") + block.String() + strings.Join(lines[at:], "")

	// The result must still parse and hold every entry.
	var check struct {
		Plugins []struct {
			ID string `yaml:"id"`
		} `yaml:"plugins"`
	}
	if err := yaml.Unmarshal([]byte(out), &check); err != nil {
		return 0, fmt.Errorf("appending to %s would break it (%v); nothing was written: paste the output of dsh-host import instead", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return len(servers), fsutil.WriteFile(path, []byte(out), info.Mode().Perm())
}

// refuseDuplicates fails when an id or an mcp-client serverName in list is
// one of servers' ids.
func refuseDuplicates(path string, list *yaml.Node, servers []importedServer) error {
	var entries []struct {
		ID     string `yaml:"id"`
		Config struct {
			ServerName string `yaml:"serverName"`
		} `yaml:"config"`
	}
	if err := list.Decode(&entries); err != nil {
		return fmt.Errorf("%s: read the plugins list: %w", path, err)
	}
	existing := map[string]int{}
	for i, e := range entries {
		existing[e.ID] = list.Content[i].Line
		if e.Config.ServerName != "" {
			existing[e.Config.ServerName] = list.Content[i].Line
		}
	}
	var errs []error
	for _, sv := range servers {
		if line, dup := existing[sv.id]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %q is already there (as an id or serverName); remove it or rename the server in the imported file", path, line, sv.id))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nothing was written:\n%w", errors.Join(errs...))
	}
	return nil
}
