package host

import (
	"fmt"
	"slices"
)

// LintWarning is one of a plugin's Lint warnings: the config key it is
// about ("rules[2].servers[0]"), and what is likely wrong.
type LintWarning struct {
	Key     string
	Message string
}

// Lint returns the warnings of c's enabled entries (Definition.Lint),
// each naming file:line, the entry id and the key, in the entries'
// order; a composition that does not validate returns Check's error and
// no warnings.
func Lint(c *Composition) ([]string, error) {
	list, err := plan(c, nil)
	if err != nil {
		return nil, err
	}
	var claims []Claim
	for _, pl := range list {
		if pl.entry.Disabled || pl.plugin == nil || pl.cfg == nil {
			continue
		}
		claims = append(claims, pl.claims...)
	}
	var out []string
	for _, pl := range list {
		if pl.entry.Disabled || pl.plugin == nil || pl.cfg == nil || pl.plugin.lint == nil {
			continue
		}
		ws, err := pl.plugin.lint(pl.cfg, slices.Clone(claims))
		e := &pl.entry
		if err != nil {
			out = append(out, fmt.Sprintf("%s: plugin %s: %v", e.where(e.Line), pl.plugin.name, err))
			continue
		}
		for _, w := range ws {
			at := e.where(e.keyLine(w.Key))
			if w.Key != "" {
				at += ": config key " + w.Key
			}
			out = append(out, at+": "+w.Message)
		}
	}
	return out, nil
}
