package clientconfig

import (
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// relativeNotes warns of the composition's stdio servers that name a
// relative path without a cwd: a client starts dsh-host in its own
// directory, not the composition's, where ./x is not found. A cwd, even a
// relative one (taken against the entry's file), fixes that.
func relativeNotes(comp string) []string {
	// Only commands are read: an unset variable reads as empty here.
	c, _ := host.ReadComposition(comp, func(string) (string, bool) { return "", true })
	if c == nil {
		return nil
	}
	var notes []string
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Name != mcpclient.PluginName || e.Disabled {
			continue
		}
		cfg, err := host.Decode[mcpclient.Config](e)
		if err != nil || cfg.Cwd != "" {
			continue
		}
		for _, a := range append([]string{cfg.Command}, cfg.Args...) {
			if strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") || a == "." || a == ".." {
				notes = append(notes, fmt.Sprintf("%s:%d: entry %s runs %q, a path relative to the directory the client starts dsh-host in, not the composition's: make it absolute, or give the entry cwd: . (the composition's directory)", e.File, e.Line, e.ID, a))
				break
			}
		}
	}
	return notes
}
