package pins

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
			fmt.Fprintf(&b, "    - %s\n", shown(was))
		}
		if now != "" {
			fmt.Fprintf(&b, "    + %s\n", shown(now))
		}
	}
	var hiddenFlags []string
	textPart("title", old.Title, cur.Title)
	textPart("description", old.Description, cur.Description)
	for _, part := range []struct {
		name     string
		was, now json.RawMessage
	}{{"inputSchema", old.InputSchema, cur.InputSchema}, {"outputSchema", old.OutputSchema, cur.OutputSchema}, {"annotations", old.Annotations, cur.Annotations}, {"_meta", old.Meta, cur.Meta}} {
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
		var flags []string
		for _, k := range keys {
			w, wok := was[k]
			n, nok := now[k]
			switch {
			case !wok:
				fmt.Fprintf(&b, "  %s: added %s\n", shown(k), shown(n))
				parts = append(parts, k)
			case !nok:
				fmt.Fprintf(&b, "  %s: removed (was %s)\n", shown(k), shown(w))
				parts = append(parts, k)
			case w != n:
				w, n := leafPair(w, n)
				fmt.Fprintf(&b, "  %s: %s → %s\n", shown(k), shown(w), shown(n))
				parts = append(parts, k)
			default:
				continue
			}
			if nok {
				// Every text in a schema (descriptions, enums, defaults,
				// names) is read by the model.
				if hidden := HiddenText(hiddenOf(k, n)); hidden != "" {
					flags = append(flags, fmt.Sprintf("  ! %s hides text a model reads: %s\n", shown(k), hidden))
				}
			}
		}
		hiddenFlags = append(hiddenFlags, flags...)
	}
	for _, f := range []struct{ field, was, now string }{{"title", old.Title, cur.Title}, {"description", old.Description, cur.Description}} {
		if f.was == f.now {
			continue
		}
		if hidden := HiddenText(f.now); hidden != "" {
			fmt.Fprintf(&b, "  ! the %s hides text a model reads: %s\n", f.field, hidden)
		}
	}
	for _, f := range hiddenFlags {
		b.WriteString(f)
	}
	return b.String(), parts
}

// leafPair is a changed leaf's old and new text as shown: two long
// strings keep what differs and some context (trimCommon), anything else
// is shown whole, so that nothing changed is left out.
func leafPair(w, n string) (string, string) {
	ws, werr := strconv.Unquote(w)
	ns, nerr := strconv.Unquote(n)
	if werr != nil || nerr != nil {
		return w, n
	}
	return trimCommon(ws, ns)
}

// hiddenOf is the text of the leaf at path k (shown as n) to search for
// hidden characters: its key path and its value as written.
func hiddenOf(k, n string) string {
	if s, err := strconv.Unquote(n); err == nil {
		return k + s
	}
	return k + n
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
				walk(path+"."+segment(k), x)
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

// segment is a key of a path as shown: a plain name as it is, any other
// quoted, so that a key cannot pose as another path or line.
func segment(k string) string {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '$') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// shown writes the characters a reader would not see (HiddenText's) as
// escapes, as strconv.Quote does for most of them: \u200b, \U000e0041.
func shown(s string) string {
	if !strings.ContainsFunc(s, invisible) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !invisible(r):
			b.WriteRune(r)
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
