package clientconfig

// Undoing a connect. A file that is still what connect wrote goes back to
// the backup byte for byte; a file the client (or the user) changed since
// keeps those changes: connect's own edit is reversed on its current text.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
)

// Undo computes the change that undoes connect on o.Client's file, and on
// the composition when --move changed it and nothing else has since.
func Undo(o Options) (*Plan, error) {
	c, err := findClient(o.Client)
	if err != nil {
		return nil, err
	}
	named := c.file(o.Env, o.Project)
	file, exists, err := resolve(named)
	if err != nil {
		return nil, err
	}
	rec, err := loadRecord(recordPath(o.StateDir, c.name, file))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no backup of %s: connect did not write it, or --undo already restored it", file)
	}
	if err != nil {
		return nil, err
	}
	p := &Plan{Client: c.name, File: file, Exists: exists, undo: true, rec: rec, recDir: o.StateDir}
	if file != named {
		p.Named = named
	}
	if exists {
		if p.Old, err = readFile(file); err != nil {
			return nil, err
		}
	}
	switch {
	case exists && (digest(p.Old) != rec.Written || rec.Edited):
		// The client's own writes (Claude Code's history, a server the
		// user added) are not connect's to drop.
		p.Notes = append(p.Notes, fmt.Sprintf("%s has changes of its own since connect first wrote it: undo takes out only connect's change, and keeps the rest", file))
		notes, err := p.reverse(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		p.Notes, p.reversed = append(p.Notes, notes...), true
	case !exists && rec.Existed:
		// Nothing of the client's is left to keep: the backup is the
		// user's file before connect.
		p.Notes = append(p.Notes, fmt.Sprintf("%s is gone since connect wrote it: undo puts back the file as it was before connect", file))
		p.New = rec.Original
	default:
		p.New, p.Remove = rec.Original, !rec.Existed && exists
	}
	if rec.Comp != "" {
		cur, err := readFile(rec.Comp)
		switch {
		case err == nil && digest(cur) == rec.CompWritten:
			p.Comp, p.CompOld, p.CompNew = rec.Comp, cur, rec.CompOriginal
		default:
			p.Notes = append(p.Notes, fmt.Sprintf("%s changed since connect --move wrote it, so it is left as it is: remove the moved entries by hand if you want them gone", rec.Comp))
		}
	}
	return p, nil
}

// edit is one server entry undo sets back: to from, its text as connect
// found it, or, when from is "", taken out.
type edit struct {
	name, from string
}

// reverse sets p.New to p.Old without connect's edits: each entry
// connect wrote that is still the one it wrote is taken out, or set back
// to what it replaced; each server --move took out and not there again
// is put back. It returns what the user should know.
func (p *Plan) reverse(c *client) (notes []string, err error) {
	doc, err := c.decode(p.Old)
	if err != nil {
		return nil, fmt.Errorf("%w: undo cannot take connect's entry out of a file it cannot read; fix the file, then undo again", err)
	}
	path := c.list(doc)
	cur := servers(doc, path)
	var edits []edit
	for _, name := range p.rec.names() {
		e, there := cur[name]
		if there && !p.rec.wrote(name, e) {
			notes = append(notes, fmt.Sprintf("the entry %q is no longer the one connect wrote (the user put another there, or edited it), so it is left as it is: remove it by hand if it should go", name))
			continue
		}
		// What connect replaced goes back, else the entry goes.
		from, err := p.rec.replaced(c, name)
		if err != nil {
			return nil, err
		}
		if there || from != "" {
			edits = append(edits, edit{name, from})
		}
	}
	if p.rec.Comp != "" && p.rec.Moved == nil {
		notes = append(notes, fmt.Sprintf("the backup does not say which servers --move took (an older dsh-host wrote it), so none is put back: copy them from %s by hand", p.rec.Comp))
	}
	for _, name := range slices.Sorted(maps.Keys(p.rec.Moved)) {
		_, there := cur[name]
		if there || slices.ContainsFunc(edits, func(e edit) bool { return e.name == name }) {
			continue // the user put it back, or another of that name
		}
		edits = append(edits, edit{name, p.rec.Moved[name]})
	}
	for i, e := range edits {
		if !bytes.Contains(p.Old, []byte("\r\n")) {
			// The file's LF endings now, whatever they were then.
			edits[i].from = strings.ReplaceAll(e.from, "\r\n", "\n")
		}
	}
	p.New, err = c.applyEdits(p.Old, path, edits)
	if err != nil {
		return nil, err
	}
	p.New = lineEndings(p.Old, p.New)
	if err := c.checkEdits(p.Old, p.New, path, edits); err != nil {
		return nil, err
	}
	return notes, nil
}

// applyEdits makes edits on text, whose servers are at path.
func (c *client) applyEdits(text []byte, path []string, edits []edit) ([]byte, error) {
	if c.format == formatTOML {
		hs, err := tomlHeaders(text)
		if err != nil {
			return nil, err
		}
		// A table the edit replaces or takes out must be one.
		doc, _ := decodeTOML(text)
		list, _ := doc["mcp_servers"].(map[string]any)
		for _, e := range edits {
			if _, there := list[e.name]; there {
				if err := tableForm(hs, e.name); err != nil {
					return nil, err
				}
			}
		}
		for _, e := range edits {
			if text, err = tomlSetServerText(text, e.name, e.from); err != nil {
				return nil, err
			}
		}
		return text, nil
	}
	for _, e := range edits {
		root, err := parseJSON(text, c.format == formatJSONC)
		if err != nil {
			return nil, err
		}
		if e.from == "" {
			text, err = deleteMember(text, root, path, e.name)
		} else {
			text, err = setMember(text, root, path, e.name, rawJSON(e.from))
		}
		if err != nil {
			return nil, err
		}
	}
	return text, nil
}

// checkEdits parses newText and checks that it holds what text held with
// edits made, and nothing else changed.
func (c *client) checkEdits(text, newText []byte, path []string, edits []edit) error {
	want, err := c.decode(text)
	if err != nil {
		return err
	}
	got, err := c.decode(newText)
	if err != nil {
		return fmt.Errorf("the edit does not parse (%v), so nothing is written: please report this", err)
	}
	obj, _ := want.(map[string]any)
	for _, k := range path {
		if len(edits) == 0 {
			break
		}
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	for _, e := range edits {
		if e.from == "" {
			delete(obj, e.name)
			continue
		}
		v, err := c.entryValue(e.name, e.from)
		if err != nil {
			return fmt.Errorf("the backup's entry %q: %w", e.name, err)
		}
		obj[e.name] = v
	}
	if !reflect.DeepEqual(got, want) {
		return errors.New("the edit would change more than the server entries, so nothing is written: please report this")
	}
	return nil
}

// entryTexts returns the text of each server in names that the file text
// (decoded: doc) has, as written there: a JSON value, or a Codex server's
// tables.
func (c *client) entryTexts(text []byte, doc any, names []string) (map[string]string, error) {
	out := map[string]string{}
	list := servers(doc, c.list(doc))
	if c.format == formatTOML {
		for _, k := range names {
			if _, ok := list[k]; !ok {
				continue
			}
			t, err := tomlServerText(text, k)
			if err != nil {
				return nil, err
			}
			if t == "" {
				return nil, fmt.Errorf("mcp_servers.%s is not written as a [mcp_servers.%s] table", k, tomlKey(k))
			}
			out[k] = t
		}
		return out, nil
	}
	root, err := parseJSON(text, c.format == formatJSONC)
	if err != nil {
		return nil, err
	}
	obj, err := lookup(text, root, c.list(doc))
	if err != nil || obj == nil {
		return out, err
	}
	for _, k := range names {
		if m := obj.member(k); m != nil {
			out[k] = string(text[m.value.start:m.value.end])
		}
	}
	return out, nil
}

// entryValue decodes a server's text, as entryTexts returns it.
func (c *client) entryValue(name, text string) (any, error) {
	if c.format == formatTOML {
		doc, err := decodeTOML([]byte(text))
		if err != nil {
			return nil, err
		}
		list, _ := doc["mcp_servers"].(map[string]any)
		return list[name], nil
	}
	root, err := parseJSON([]byte(text), c.format == formatJSONC)
	if err != nil {
		return nil, err
	}
	return decodeJSON([]byte(text), root)
}

// taken returns what connect takes from the file text (decoded: doc) as
// it writes entry name and moves the servers moved out: the entry it
// replaces, if there is one, and the moved servers, by name, as written.
func (c *client) taken(text []byte, doc any, name string, moved []string) (replaced, movedText map[string]string, err error) {
	if _, ok := servers(doc, c.list(doc))[name]; !ok && len(moved) == 0 {
		return nil, nil, nil // no server: nothing to read again
	}
	all, err := c.entryTexts(text, doc, append([]string{name}, moved...))
	if err != nil {
		return nil, nil, err
	}
	if t, ok := all[name]; ok {
		replaced = map[string]string{name: t}
	}
	if len(moved) > 0 {
		movedText = map[string]string{}
		for _, k := range moved {
			movedText[k] = all[k]
		}
	}
	return replaced, movedText, nil
}

// decode decodes a client's file (an empty one is an empty object).
func (c *client) decode(text []byte) (any, error) {
	if c.format == formatTOML {
		return decodeTOML(text)
	}
	root, err := parseJSON(text, c.format == formatJSONC)
	if err != nil {
		return nil, err
	}
	return decodeJSON(text, root)
}

// writtenEntry is the record's Entries for the entry connect writes for
// o: what the plan's check found in the new file, without decoding it
// again (a ~/.claude.json is megabytes).
func writtenEntry(c *client, o Options) (map[string]json.RawMessage, error) {
	var v any
	if c.format == formatTOML {
		v = tablesValue(codexTables(c, o))
	} else {
		v = toPlain(c.entry(o.Target, c.nameLimit(o.Name)))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return map[string]json.RawMessage{o.Name: b}, nil
}

// inherit keeps prev's backup, the record of the file's first connect,
// and what every connect since wrote, replaced and moved. A file changed
// since prev was written is marked Edited.
func (r *record) inherit(prev record, old string) {
	r.Existed, r.Original, r.Mode = prev.Existed, prev.Original, prev.Mode
	r.Edited = prev.Edited || prev.Written != old
	prevNames := prev.names()
	entries := map[string]json.RawMessage{}
	if prev.Entries == nil && prev.Name != "" {
		entries[prev.Name] = nil
	}
	maps.Copy(entries, prev.Entries)
	maps.Copy(entries, r.Entries)
	// What a name replaced is what its first write replaced: a second
	// connect replaces connect's own entry.
	replaced := maps.Clone(prev.Replaced)
	for k, t := range r.Replaced {
		if !slices.Contains(prevNames, k) {
			if replaced == nil {
				replaced = map[string]string{}
			}
			replaced[k] = t
		}
	}
	moved := maps.Clone(prev.Moved)
	if r.Moved != nil {
		if moved == nil {
			moved = map[string]string{}
		}
		maps.Copy(moved, r.Moved)
	}
	r.Entries, r.Replaced, r.Moved = entries, replaced, moved
}

// replaced returns the text of the entry connect replaced under name, or
// "" when there was none. A record of an older dsh-host does not hold it:
// the backup's entry under name is.
func (r *record) replaced(c *client, name string) (string, error) {
	if t, ok := r.Replaced[name]; ok {
		return t, nil
	}
	if w := r.Entries[name]; len(w) > 0 && string(w) != "null" {
		return "", nil
	}
	if len(bytes.TrimSpace(r.Original)) == 0 {
		return "", nil
	}
	doc, err := c.decode(r.Original)
	if err != nil {
		return "", fmt.Errorf("the backup: %w", err)
	}
	all, err := c.entryTexts(r.Original, doc, []string{name})
	if err != nil {
		return "", fmt.Errorf("the backup: %w", err)
	}
	return all[name], nil
}

// names are the entries connect wrote, sorted.
func (r *record) names() []string {
	if r.Entries == nil && r.Name != "" {
		return []string{r.Name}
	}
	return slices.Sorted(maps.Keys(r.Entries))
}

// wrote reports whether entry e, at name, is one connect wrote: one that
// starts dsh-host serve, or exactly what connect wrote there (an HTTP
// entry).
func (r *record) wrote(name string, e any) bool {
	if _, ok := isDshHost(e); ok {
		return true
	}
	w, ok := r.Entries[name]
	if !ok || w == nil {
		return false
	}
	var a, b any
	cur, err := json.Marshal(e)
	if err != nil || json.Unmarshal(cur, &a) != nil || json.Unmarshal(w, &b) != nil {
		return false
	}
	return b != nil && reflect.DeepEqual(a, b)
}
