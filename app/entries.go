package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/internal/fsutil"
)

// EntryRequest disables or enables one entry of the composition by its
// id, as an edit of the file would (`disabled: true`).
type EntryRequest struct {
	ID       string `json:"id"`
	Disabled bool   `json:"disabled"`
}

// SetDisabled edits the composition file, setting req's entry's disabled
// key and nothing else (the rest of the file, comments included, stays
// as it is), then reloads as Reload does. An entry the file does not
// hold in block style (one of an included file, or written {id: ...})
// is an error naming it; nothing is written then.
func (l *Local) SetDisabled(ctx context.Context, req EntryRequest) (ReloadResult, error) {
	if err := l.setDisabledInFile(req); err != nil {
		return ReloadResult{}, err
	}
	return l.Reload(ctx)
}

// setDisabledInFile is SetDisabled's edit of the file, one at a time.
func (l *Local) setDisabledInFile(req EntryRequest) error {
	l.editMu.Lock()
	defer l.editMu.Unlock()
	path, err := filepath.EvalSymlinks(l.File) // write the file, not over its link
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := setDisabled(data, req.ID, req.Disabled)
	if err != nil {
		return fmt.Errorf("%s: %w", l.File, err)
	}
	if bytes.Equal(out, data) {
		return nil
	}
	return fsutil.Rewrite(path, out, 0o644)
}

// setDisabled returns data with entry id's disabled key set, by editing
// its line (or adding one under its id), and checks that the result
// decodes to the same document but for that key.
func setDisabled(data []byte, id string, disabled bool) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	entry, err := findEntry(&doc, id)
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	value := "false"
	if disabled {
		value = "true"
	}
	var idKey *yaml.Node
	for i := 0; i+1 < len(entry.Content); i += 2 {
		k, v := entry.Content[i], entry.Content[i+1]
		switch k.Value {
		case "id":
			idKey = k
		case "disabled":
			if v.Kind != yaml.ScalarNode || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				return nil, fmt.Errorf("entry %q: its disabled key is not a plain value; edit it by hand", id)
			}
			l := lines[v.Line-1]
			rest := value
			if v.LineComment != "" {
				rest += " " + v.LineComment
			}
			lines[v.Line-1] = l[:v.Column-1] + rest + lineEnd(l)
			return checked(data, []byte(strings.Join(lines, "")), id, disabled)
		}
	}
	if !disabled {
		return data, nil // no key: enabled already
	}
	indent := strings.Repeat(" ", idKey.Column-1)
	at := idKey.Line // the line after id's
	nl := lineEnd(lines[at-1])
	if nl == "" {
		nl = "\n"
		lines[at-1] += nl
	}
	lines = append(lines[:at], append([]string{indent + "disabled: true" + nl}, lines[at:]...)...)
	return checked(data, []byte(strings.Join(lines, "")), id, disabled)
}

func lineEnd(l string) string {
	if strings.HasSuffix(l, "\r\n") {
		return "\r\n"
	}
	if strings.HasSuffix(l, "\n") {
		return "\n"
	}
	return ""
}

// findEntry returns the block mapping of plugins' entry id.
func findEntry(doc *yaml.Node, id string) (*yaml.Node, error) {
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("no plugins list")
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "plugins" {
			continue
		}
		list := top.Content[i+1]
		for _, e := range list.Content {
			if e.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(e.Content); j += 2 {
				if e.Content[j].Value == "id" && e.Content[j+1].Value == id {
					if e.Style&yaml.FlowStyle != 0 || list.Style&yaml.FlowStyle != 0 {
						return nil, fmt.Errorf("entry %q (line %d) is written in flow style ({...}); edit its disabled key by hand", id, e.Line)
					}
					return e, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no entry %q in the file's plugins (one of an included file is edited there)", id)
}

// checked returns out if it decodes as old does with entry id's disabled
// set, else an error: an edit that would change anything else is not
// written.
func checked(old, out []byte, id string, disabled bool) ([]byte, error) {
	var want, got map[string]any
	if err := yaml.Unmarshal(old, &want); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("the edit of entry %q would not parse (%v); nothing was written", id, err)
	}
	if list, ok := want["plugins"].([]any); ok {
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["id"] == id {
				m["disabled"] = disabled
			}
		}
	}
	if list, ok := got["plugins"].([]any); ok {
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["id"] == id {
				if _, had := m["disabled"]; !had {
					m["disabled"] = false
				}
			}
		}
	}
	if !reflect.DeepEqual(want, got) {
		return nil, fmt.Errorf("the edit of entry %q would change more than its disabled key; nothing was written", id)
	}
	return out, nil
}
