// Package clientconfig points an MCP client (Claude Code, Codex, Gemini
// CLI, opencode, Cursor, VS Code) at dsh-host: it writes one server entry
// into the client's own config file, editing it as text so that every
// other byte stays, keeps a backup that Undo restores exactly, and can
// move the client's own servers into the composition first. A front end
// shows the plan's diff, asks, and applies it.
package clientconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/internal/importer"
)

// DefaultName is the entry's name in the client's file: short, as clients
// put it in front of every tool's name (mcp__dsh__…) under a 64-character
// cap.
const DefaultName = "dsh"

// validName is an entry name every client takes, at most maxName long
// (apart: a counted repetition compiles to 30 KB in the package
// initialisation every command pays, issue 44).
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxName = 32

// maxFile bounds what is read of a client's file (Claude Code's
// ~/.claude.json grows with its history, to a few MB).
const maxFile = 64 << 20

// Options says what to connect, and where.
type Options struct {
	// Client is one of Clients().
	Client string
	// Project, when set, is a project directory: its file (.mcp.json,
	// .vscode/mcp.json, …) is written instead of the user's.
	Project string
	Env     Env
	Target  Target
	// Name is the entry's name; "" is DefaultName.
	Name string
	// Move imports the client's other servers into the composition and
	// removes them from the client.
	Move bool
	// StateDir holds the backups ($DSH_HOME/connect).
	StateDir string
}

// Plan is a change to a client's file (and, with Move, the composition),
// computed and checked, not yet written.
type Plan struct {
	Client string
	// File is the file written; Named, the path the client reads when it
	// is a symbolic link to File (the link stays).
	File, Named string
	Old, New    []byte
	// Exists says whether File exists; Remove, that applying the plan
	// removes it (Undo of a file connect created).
	Exists, Remove bool
	// Comp, CompOld and CompNew are the composition's change, when there
	// is one.
	Comp             string
	CompOld, CompNew []byte
	// Moved names the servers moved into the composition.
	Moved []string
	// Notes say what else the user should know: servers not moved, what
	// undo leaves.
	Notes []string

	undo bool
	// reversed: the undo reverses connect's edits on the file as it is
	// now, instead of restoring the backup.
	reversed bool
	project  bool // the file is a project's
	rec      record
	recDir   string
}

// record is a connect's backup, one per client file, kept until --undo.
type record struct {
	Client string `json:"client"`
	File   string `json:"file"`
	Name   string `json:"name"`
	// Existed and Original are the file before the first connect.
	Existed  bool   `json:"existed"`
	Original []byte `json:"original"`
	Mode     uint32 `json:"mode"`
	// Written is the sha256 of what connect wrote last.
	Written string `json:"written"`
	// Entries are the entries connect wrote since Original, by name, as
	// JSON (null: not known, a record of an older dsh-host's), so that
	// undo tells them from an entry the user put in their place.
	Entries map[string]json.RawMessage `json:"entries,omitempty"`
	// Replaced holds, by name, the entry connect's replaced when it
	// first wrote that name; Moved, the servers --move took out of the
	// client. Each is its text as the file had it, for undo to put back.
	Replaced map[string]string `json:"replaced,omitempty"`
	Moved    map[string]string `json:"moved,omitempty"`
	// Edited says the file changed between two connects: Original is
	// no longer what the file is without connect's edits, and undo
	// reverses those edits instead of restoring it.
	Edited bool `json:"edited,omitempty"`
	// The composition, when --move changed it.
	Comp         string `json:"composition,omitempty"`
	CompOriginal []byte `json:"compositionOriginal,omitempty"`
	CompWritten  string `json:"compositionWritten,omitempty"`
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// recordPath is the backup's file for the client file path.
func recordPath(dir, client, path string) string {
	return filepath.Join(dir, client+"-"+digest([]byte(path))[:16]+".json")
}

// Prepare computes the change that connects o.Client, and checks it: the
// new file must hold exactly the old values plus the entry (and minus the
// moved servers). A file that does not parse is refused, naming its line.
func Prepare(o Options) (*Plan, error) {
	c, err := findClient(o.Client)
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if len(o.Name) > maxName || !validName.MatchString(o.Name) {
		return nil, fmt.Errorf("entry name %q: want letters, digits, _ and - (at most 32), which every client takes as a server name", o.Name)
	}
	if o.Target.URL != "" {
		if err := o.Target.checkGateway(); err != nil {
			return nil, err
		}
	}
	if o.Target.URL == "" && (!filepath.IsAbs(o.Target.Executable) || !filepath.IsAbs(o.Target.Composition)) {
		return nil, errors.New("the executable and the composition must be absolute paths: clients start it from their own directory")
	}
	named := c.file(o.Env, o.Project)
	file, exists, err := resolve(named)
	if err != nil {
		return nil, err
	}
	if o.Project != "" {
		if err := inProject(o.Project, named, file); err != nil {
			return nil, err
		}
	}
	p := &Plan{Client: c.name, File: file, Exists: exists, recDir: o.StateDir, project: o.Project != ""}
	if file != named {
		p.Named = named
	}
	if exists {
		if p.Old, err = readFile(file); err != nil {
			return nil, err
		}
	}
	var doc any // nil when the file does not parse: planning says where
	if len(bytes.TrimSpace(p.Old)) > 0 {
		doc, _ = c.decode(p.Old)
	}
	if err := p.notSomeoneElses(c, doc, o.Name); err != nil {
		return nil, err
	}
	var moveFrom []byte // the client's file without dsh-host's entries
	switch c.format {
	case formatTOML:
		p.New, moveFrom, err = planTOML(c, o, p.Old)
	default:
		p.New, moveFrom, err = planJSON(c, o, p.Old)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if o.Move {
		if err := p.move(c, o, moveFrom); err != nil {
			return nil, err
		}
	}
	p.New = lineEndings(p.Old, p.New)
	p.rec = record{Client: c.name, File: file, Name: o.Name}
	if p.rec.Entries, err = writtenEntry(c, o); err != nil {
		return nil, err
	}
	if p.rec.Replaced, p.rec.Moved, err = c.taken(p.Old, doc, o.Name, p.Moved); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if c.note != "" {
		p.Notes = append(p.Notes, c.note)
	}
	if o.Target.URL == "" {
		p.Notes = append(p.Notes, relativeNotes(o.Target.Composition)...)
	}
	return p, nil
}

// notSomeoneElses refuses to replace an entry called name that is not
// dsh-host's: one that starts dsh-host serve, or one connect wrote under
// that name (its backup says so). A server of the user's that happens to have the name
// is not overwritten.
func (p *Plan) notSomeoneElses(c *client, doc any, name string) error {
	e, ok := servers(doc, c.list(doc))[name]
	if !ok {
		return nil
	}
	if _, dsh := isDshHost(e); dsh {
		return nil
	}
	// Any name connect wrote, not only the last one: a record names them
	// all (connect under another name, then again under the first).
	if rec, err := loadRecord(recordPath(p.recDir, c.name, p.File)); err == nil && slices.Contains(rec.names(), name) {
		return nil
	}
	return fmt.Errorf("%s: a server named %q is already there and it is not dsh-host's; it is left alone: choose another name with --name", p.File, name)
}

// isDshHost reports whether a client's server entry starts dsh-host serve
// (in any client's shape), and with which composition.
func isDshHost(entry any) (comp string, ok bool) {
	m, _ := entry.(map[string]any)
	if m == nil {
		return "", false
	}
	var argv []string
	switch cmd := m["command"].(type) {
	case string:
		argv = append(argv, cmd)
		args, _ := m["args"].([]any)
		for _, a := range args {
			s, _ := a.(string)
			argv = append(argv, s)
		}
	case []any: // opencode
		for _, a := range cmd {
			s, _ := a.(string)
			argv = append(argv, s)
		}
	}
	if len(argv) < 2 || strings.TrimSuffix(filepath.Base(argv[0]), ".exe") != "dsh-host" || !slices.Contains(argv[1:], "serve") {
		return "", false
	}
	for i, a := range argv {
		if (a == "-c" || a == "--c") && i+1 < len(argv) {
			comp = argv[i+1]
		}
	}
	if comp == "" {
		comp = "composition.yml"
	}
	return comp, true
}

// servers returns the server list of a decoded client file, or nil.
func servers(doc any, path []string) map[string]any {
	v := doc
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	m, _ := v.(map[string]any)
	return m
}

// ours lists the names in list that dsh-host's entries have: the entry
// connect writes, and any other that starts dsh-host serve (it is not
// moved: the composition would serve itself).
func ours(list map[string]any, name string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(list)) {
		if _, dsh := isDshHost(list[k]); dsh || k == name {
			out = append(out, k)
		}
	}
	return out
}

// planJSON computes the new text of a JSON client file, and the text to
// move servers from.
func planJSON(c *client, o Options, old []byte) (newText, moveFrom []byte, err error) {
	text := old
	if len(bytes.TrimSpace(text)) == 0 {
		text = []byte(c.skeleton)
	}
	root, err := parseJSON(text, c.format == formatJSONC)
	if err != nil {
		return nil, nil, err
	}
	if root.kind != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	before, err := decodeJSON(text, root)
	if err != nil {
		return nil, nil, err
	}
	path := c.list(before)
	if _, err := lookup(text, root, path); err != nil {
		return nil, nil, err
	}
	list := servers(before, path)
	// Without dsh-host's own entries: what --move takes from.
	moveFrom = text
	for _, k := range ours(list, o.Name) {
		r, err := parseJSON(moveFrom, true)
		if err != nil {
			return nil, nil, err
		}
		if moveFrom, err = deleteMember(moveFrom, r, path, k); err != nil {
			return nil, nil, err
		}
	}
	r, err := parseJSON(moveFrom, true)
	if err != nil {
		return nil, nil, err
	}
	if moveFrom, err = plainJSON(moveFrom, r); err != nil {
		return nil, nil, err
	}
	entry := c.entry(o.Target, c.nameLimit(o.Name))
	if newText, err = setMember(text, root, path, o.Name, entry); err != nil {
		return nil, nil, err
	}
	return newText, moveFrom, checkJSON(c, text, newText, path, o.Name, entry, nil)
}

// checkJSON parses newText and checks that it holds what text held, with
// entry set under name and the servers in removed gone.
func checkJSON(c *client, text, newText []byte, path []string, name string, entry any, removed []string) error {
	r0, err := parseJSON(text, c.format == formatJSONC)
	if err != nil {
		return err
	}
	want, err := decodeJSON(text, r0)
	if err != nil {
		return err
	}
	r1, err := parseJSON(newText, c.format == formatJSONC)
	if err != nil {
		return fmt.Errorf("the edit does not parse (%v), so nothing is written: please report this", err)
	}
	got, err := decodeJSON(newText, r1)
	if err != nil {
		return err
	}
	obj := want.(map[string]any)
	for _, k := range path {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	for _, k := range removed {
		delete(obj, k)
	}
	if entry != nil {
		obj[name] = toPlain(entry)
	}
	if !reflect.DeepEqual(got, want) {
		return errors.New("the edit would change more than the server entries, so nothing is written: please report this")
	}
	return nil
}

// codexTables is Codex's entry: the server's table and, for stdio, the
// approval of mcp_call, which has no annotations to let Codex call it
// without asking.
func codexTables(c *client, o Options) []ttable {
	ts := []ttable{{path: []string{"mcp_servers", o.Name}, keys: c.entry(o.Target, c.nameLimit(o.Name))}}
	ts = append(ts, ttable{path: []string{"mcp_servers", o.Name, "tools", "mcp_call"}, keys: ordered{{"approval_mode", "approve"}}})
	return ts
}

// planTOML is planJSON for Codex's config.toml.
func planTOML(c *client, o Options, old []byte) (newText, moveFrom []byte, err error) {
	before, err := decodeTOML(old)
	if err != nil {
		return nil, nil, err
	}
	list, _ := before["mcp_servers"].(map[string]any)
	hs, err := tomlHeaders(old)
	if err != nil {
		return nil, nil, err
	}
	touched := ours(list, o.Name)
	if err := tableForm(hs, touched...); err != nil {
		return nil, nil, err
	}
	moveFrom = old
	for _, k := range touched {
		if moveFrom, err = tomlSetServer(moveFrom, k, nil); err != nil {
			return nil, nil, err
		}
	}
	newText, err = tomlSetServer(old, o.Name, codexTables(c, o))
	if err != nil {
		return nil, nil, err
	}
	return newText, moveFrom, checkTOML(old, newText, o.Name, codexTables(c, o), nil)
}

// tableForm fails unless each server in names is written as its own
// [mcp_servers.NAME] table, the form connect edits.
func tableForm(hs []theader, names ...string) error {
	for _, k := range names {
		if !slices.ContainsFunc(hs, func(h theader) bool { return slices.Equal(h.path, []string{"mcp_servers", k}) }) {
			return fmt.Errorf("mcp_servers.%s is not written as a [mcp_servers.%s] table (but as an inline table or dotted keys), which connect does not edit: write it as a table, or remove it", k, tomlKey(k))
		}
	}
	return nil
}

// checkTOML is checkJSON for TOML.
func checkTOML(text, newText []byte, name string, ts []ttable, removed []string) error {
	want, err := decodeTOML(text)
	if err != nil {
		return err
	}
	got, err := decodeTOML(newText)
	if err != nil {
		return fmt.Errorf("the edit does not parse (%v), so nothing is written: is a server under mcp_servers written as an inline table? write it as a [mcp_servers.NAME] table", err)
	}
	list, _ := want["mcp_servers"].(map[string]any)
	if list == nil {
		list = map[string]any{}
		want["mcp_servers"] = list
	}
	for _, k := range removed {
		delete(list, k)
	}
	if ts != nil {
		list[name] = tablesValue(ts)
	}
	if !reflect.DeepEqual(got, want) {
		return errors.New("the edit would change more than the server entries, so nothing is written: please report this")
	}
	return nil
}

// tablesValue is the server entry of ts (a server's table and the tables
// under it) as decodeTOML yields it.
func tablesValue(ts []ttable) map[string]any {
	entry := map[string]any{}
	for _, t := range ts {
		m := entry
		for _, k := range t.path[2:] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		for _, e := range t.keys {
			m[e.k] = e.v
			if a, ok := e.v.([]string); ok {
				var l []any
				for _, s := range a {
					l = append(l, s)
				}
				m[e.k] = l
			}
		}
	}
	return entry
}

// move imports the servers of moveFrom (the client's file without
// dsh-host's entries) into the composition and takes them out of the
// planned file.
func (p *Plan) move(c *client, o Options, moveFrom []byte) error {
	im, err := importer.Parse(moveFrom, p.File)
	if err != nil || im.Len() == 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s has no server to move", p.File))
		if im != nil {
			p.Notes = append(p.Notes, im.Notes...)
		}
		return nil
	}
	p.Notes = append(p.Notes, im.Notes...)
	p.Comp = o.Target.Composition
	if p.CompOld, err = readFile(p.Comp); err != nil {
		return err
	}
	if p.CompNew, err = im.Appended(p.Comp, p.CompOld, "Moved from "+p.File+" by dsh-host connect --move."); err != nil {
		return err
	}
	p.Moved = im.Names()
	newText := p.New
	if c.format == formatTOML {
		hs, err := tomlHeaders(newText)
		if err == nil {
			err = tableForm(hs, p.Moved...)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.File, err)
		}
	}
	for _, k := range p.Moved {
		switch c.format {
		case formatTOML:
			newText, err = tomlSetServer(newText, k, nil)
		default:
			var r *jnode
			if r, err = parseJSON(newText, c.format == formatJSONC); err == nil {
				var doc any
				doc, err = decodeJSON(newText, r)
				if err == nil {
					newText, err = deleteMember(newText, r, c.list(doc), k)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.File, err)
		}
	}
	switch c.format {
	case formatTOML:
		err = checkTOML(p.New, newText, "", nil, p.Moved)
	default:
		r, _ := parseJSON(p.New, true)
		doc, _ := decodeJSON(p.New, r)
		err = checkJSON(c, p.New, newText, c.list(doc), "", nil, p.Moved)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p.File, err)
	}
	p.New = newText
	return nil
}

// lineEndings gives the lines new added the old file's CRLF endings when
// every line of it has them (a file from Windows).
func lineEndings(old, new []byte) []byte {
	n := bytes.Count(old, []byte("\n"))
	if n == 0 || bytes.Count(old, []byte("\r\n")) != n {
		return new
	}
	return bytes.ReplaceAll(bytes.ReplaceAll(new, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

// Changed reports whether applying the plan changes anything.
func (p *Plan) Changed() bool {
	// An undo always drops its backup, even where the file is back as
	// it was already (else the backup would stay for ever).
	return p.undo || !bytes.Equal(p.Old, p.New) || p.Remove || !bytes.Equal(p.CompOld, p.CompNew)
}

// Diff is the plan as unified diffs: the client's file, then the
// composition's.
func (p *Plan) Diff() string {
	name := p.File
	if p.Named != "" {
		name = p.Named + " -> " + p.File
	}
	var b strings.Builder
	if p.Remove {
		fmt.Fprintf(&b, "remove %s (connect created it)\n", name)
	} else {
		b.WriteString(unifiedDiff(name, p.Old, p.New))
	}
	if p.Comp != "" {
		b.WriteString(unifiedDiff(p.Comp, p.CompOld, p.CompNew))
	}
	return b.String()
}
