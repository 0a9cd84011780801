package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// describeChange is what a person reads before trusting a tool again: for
// each part of the definition that differs from old (nil for a tool never
// trusted, whose whole definition is shown), the old and new values.
// Strings are quoted, which shows invisible characters as escapes, and
// text hidden from a reader is flagged with HiddenText. parts names what
// changed (description, inputSchema.properties.q), without the values.
func describeChange(old *pinned, cur pinned) (text string, parts []string) {
	var b strings.Builder
	if old == nil {
		old = &pinned{}
	}
	textPart := func(field, was, now string) {
		if was == now {
			return
		}
		fmt.Fprintf(&b, "  %s:\n", field)
		parts = append(parts, field)
		was, now = trimCommon(was, now)
		if was != "" {
			fmt.Fprintf(&b, "    - %s\n", was)
		}
		if now != "" {
			fmt.Fprintf(&b, "    + %s\n", now)
		}
	}
	textPart("title", old.Title, cur.Title)
	textPart("description", old.Description, cur.Description)
	for _, part := range []struct {
		name     string
		was, now json.RawMessage
	}{{"inputSchema", old.InputSchema, cur.InputSchema}, {"outputSchema", old.OutputSchema, cur.OutputSchema}, {"annotations", old.Annotations, cur.Annotations}} {
		was, now := flatten(part.name, part.was), flatten(part.name, part.now)
		var keys []string
		for k := range was {
			keys = append(keys, k)
		}
		for k := range now {
			if _, ok := was[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			w, wok := was[k]
			n, nok := now[k]
			switch {
			case !wok:
				fmt.Fprintf(&b, "  %s: added %s\n", k, cut(n, 300))
				parts = append(parts, k)
			case !nok:
				fmt.Fprintf(&b, "  %s: removed (was %s)\n", k, cut(w, 300))
				parts = append(parts, k)
			case w != n:
				fmt.Fprintf(&b, "  %s: %s → %s\n", k, cut(w, 300), cut(n, 300))
				parts = append(parts, k)
			}
		}
	}
	for _, f := range []struct{ field, was, now string }{{"title", old.Title, cur.Title}, {"description", old.Description, cur.Description}} {
		if f.was == f.now {
			continue
		}
		if hidden := HiddenText(f.now); hidden != "" {
			fmt.Fprintf(&b, "  ! the %s hides text a model reads: %s\n", f.field, hidden)
		}
	}
	// Descriptions inside the schemas are read by the model too.
	for k, v := range flatten("inputSchema", cur.InputSchema) {
		if !strings.HasSuffix(k, ".description") && !strings.HasSuffix(k, ".title") {
			continue
		}
		if s, err := strconv.Unquote(v); err == nil {
			if hidden := HiddenText(s); hidden != "" {
				fmt.Fprintf(&b, "  ! %s hides text a model reads: %s\n", k, hidden)
			}
		}
	}
	return b.String(), parts
}

// trimCommon quotes a and b, keeping of a long pair only what differs and
// some context: a description rewritten at its end shows its end.
func trimCommon(a, b string) (string, string) {
	const context, short = 40, 240
	if len(a)+len(b) <= 2*short || a == "" || b == "" {
		return quoteOrEmpty(a), quoteOrEmpty(b)
	}
	ra, rb := []rune(a), []rune(b)
	p := 0
	for p < len(ra) && p < len(rb) && ra[p] == rb[p] {
		p++
	}
	s := 0
	for s < len(ra)-p && s < len(rb)-p && ra[len(ra)-1-s] == rb[len(rb)-1-s] {
		s++
	}
	from := max(p-context, 0)
	part := func(r []rune) string {
		to := min(len(r)-s+context, len(r))
		q := strconv.Quote(string(r[from:to]))
		if from > 0 {
			q = "…" + q
		}
		if to < len(r) {
			q += "…"
		}
		return q
	}
	return part(ra), part(rb)
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

// flatten maps each leaf of a JSON object to its path (prefix.a.b) and its
// text: a string quoted, any other value as JSON; arrays are leaves. A value that is not an object is one leaf.
func flatten(prefix string, raw json.RawMessage) map[string]string {
	out := map[string]string{}
	if len(raw) == 0 {
		return out
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		out[prefix] = string(raw)
		return out
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, x := range m {
				walk(path+"."+k, x)
			}
			return
		}
		if s, ok := v.(string); ok {
			out[path] = strconv.Quote(s) // shows invisible characters
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		out[path] = strings.TrimSuffix(buf.String(), "\n")
	}
	walk(prefix, v)
	return out
}
