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

// edit is one server entry undo sets back: from the backup's text, or,
// when from is "", taken out.
type edit struct {
	name string
	from string
	// want is its value decoded from the backup, for the check.
	want any
}

// reverse sets p.New to p.Old without connect's edits: each entry
// connect wrote that is still the one it wrote is taken out, or set back
// to what it replaced; each server --move took out and not there again
// is put back from the backup. It returns what the user should know.
func (p *Plan) reverse(c *client) (notes []string, err error) {
	doc, err := c.decode(p.Old)
	if err != nil {
		return nil, fmt.Errorf("%w: undo cannot take connect's entry out of a file it cannot read; fix the file, then undo again", err)
	}
	var orig any = map[string]any{}
	if len(bytes.TrimSpace(p.rec.Original)) > 0 {
		if orig, err = c.decode(p.rec.Original); err != nil {
			return nil, fmt.Errorf("the backup: %w", err)
		}
	}
	path := c.list(doc)
	cur, was := servers(doc, path), servers(orig, c.list(orig))
	var edits []edit
	// add sets name back to the backup's entry, or takes it out when
	// the backup has none.
	add := func(name string) error {
		if slices.ContainsFunc(edits, func(e edit) bool { return e.name == name }) {
			return nil
		}
		e := edit{name: name}
		if v, had := was[name]; had {
			from, err := c.entryText(p.rec.Original, orig, name)
			if err != nil {
				return fmt.Errorf("the backup: %w", err)
			}
			if from == "" {
				return fmt.Errorf("the backup's entry %q is not written as connect edits it", name)
			}
			if !bytes.Contains(p.Old, []byte("\r\n")) {
				// The file's LF endings now, whatever they were then.
				from = strings.ReplaceAll(from, "\r\n", "\n")
			}
			e.from, e.want = from, v
		}
		edits = append(edits, e)
		return nil
	}
	for _, name := range p.rec.names() {
		e, there := cur[name]
		_, had := was[name]
		switch {
		case there && !p.rec.wrote(name, e):
			notes = append(notes, fmt.Sprintf("the entry %q is no longer the one connect wrote (the user put another there, or edited it), so it is left as it is: remove it by hand if it should go", name))
			continue
		case !there && !had:
			continue // taken out already
		}
		// What connect replaced goes back, else the entry goes.
		if err := add(name); err != nil {
			return nil, err
		}
	}
	if p.rec.Comp != "" && len(p.rec.Moved) == 0 {
		notes = append(notes, fmt.Sprintf("the backup does not say which servers --move took (an older dsh-host wrote it), so none is put back: copy them from %s by hand", p.rec.Comp))
	}
	for _, name := range p.rec.Moved {
		if _, there := cur[name]; there {
			continue // the user put it back, or another of that name
		}
		if _, had := was[name]; had {
			if err := add(name); err != nil {
				return nil, err
			}
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
		} else {
			obj[e.name] = e.want
		}
	}
	if !reflect.DeepEqual(got, want) {
		return errors.New("the edit would change more than the server entries, so nothing is written: please report this")
	}
	return nil
}

// entryText returns server name's text in the file text (decoded: doc),
// as written there, or "" when it has none.
func (c *client) entryText(text []byte, doc any, name string) (string, error) {
	if c.format == formatTOML {
		return tomlServerText(text, name)
	}
	root, err := parseJSON(text, c.format == formatJSONC)
	if err != nil {
		return "", err
	}
	obj, err := lookup(text, root, c.list(doc))
	if err != nil || obj == nil {
		return "", err
	}
	m := obj.member(name)
	if m == nil {
		return "", nil
	}
	return string(text[m.value.start:m.value.end]), nil
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
// and what every connect since wrote and moved. A file changed since prev
// was written is marked Edited.
func (r *record) inherit(prev record, old string) {
	r.Existed, r.Original, r.Mode = prev.Existed, prev.Original, prev.Mode
	r.Edited = prev.Edited || prev.Written != old
	entries := map[string]json.RawMessage{}
	if prev.Entries == nil && prev.Name != "" {
		entries[prev.Name] = nil
	}
	maps.Copy(entries, prev.Entries)
	maps.Copy(entries, r.Entries)
	r.Entries = entries
	for _, k := range prev.Moved {
		if !slices.Contains(r.Moved, k) {
			r.Moved = append(r.Moved, k)
		}
	}
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
