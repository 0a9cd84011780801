package clientconfig

// Codex's config.toml, edited as text: a server is its [mcp_servers.NAME]
// table and the tables under it ([mcp_servers.NAME.tools.mcp_call]); an
// edit removes or replaces exactly those lines, so every other byte, and
// every comment, stays. The file is parsed (BurntSushi/toml) before and
// after, and the result must hold exactly the old values plus the change.

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// theader is one [table] or [[array table]] header line.
type theader struct {
	start int      // the header line's first byte
	path  []string // its dotted key, unquoted
}

// tomlHeaders finds the table headers of text: lines that begin with [
// outside strings and multi-line values.
func tomlHeaders(text []byte) ([]theader, error) {
	var out []theader
	depth := 0
	lineStart := true
	for i := 0; i < len(text); {
		c := text[i]
		if lineStart && depth == 0 {
			j := i
			for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
				j++
			}
			if j < len(text) && text[j] == '[' {
				path, err := headerPath(text[j:])
				if err != nil {
					l, _ := lineCol(text, j)
					return nil, fmt.Errorf("line %d: %w", l, err)
				}
				out = append(out, theader{start: i, path: path})
				nl := bytes.IndexByte(text[i:], '\n')
				if nl < 0 {
					break
				}
				i += nl + 1
				continue
			}
		}
		lineStart = false
		switch {
		case c == '\n':
			lineStart = true
			i++
		case c == '#':
			nl := bytes.IndexByte(text[i:], '\n')
			if nl < 0 {
				i = len(text)
			} else {
				i += nl
			}
		case bytes.HasPrefix(text[i:], []byte(`"""`)), bytes.HasPrefix(text[i:], []byte(`'''`)):
			q := text[i : i+3]
			j := i + 3
			for {
				k := bytes.Index(text[j:], q)
				if k < 0 {
					return nil, fmt.Errorf("a multi-line string that does not end")
				}
				j += k
				if q[0] == '"' && escaped(text, j) {
					j++
					continue
				}
				break
			}
			// A closing quote may be followed by one or two more quotes
			// that belong to the string.
			j += 3
			for j < len(text) && text[j] == q[0] {
				j++
			}
			i = j
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(text) && text[j] != c && text[j] != '\n' {
				if c == '"' && text[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '[' || c == '{':
			depth++
			i++
		case c == ']' || c == '}':
			depth--
			i++
		default:
			i++
		}
	}
	return out, nil
}

// escaped reports whether the byte at i follows an odd number of
// backslashes.
func escaped(text []byte, i int) bool {
	n := 0
	for i > 0 && text[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+`)

// headerPath parses the dotted key of a header line that starts at line.
func headerPath(line []byte) ([]string, error) {
	s := string(line)
	if nl := strings.IndexByte(s, '\n'); nl >= 0 {
		s = s[:nl]
	}
	s = strings.TrimPrefix(s, "[")
	s = strings.TrimPrefix(s, "[") // an array of tables
	var path []string
	for {
		s = strings.TrimLeft(s, " \t")
		switch {
		case strings.HasPrefix(s, `"`), strings.HasPrefix(s, `'`):
			q := s[0]
			end := 1
			for end < len(s) && s[end] != q {
				if q == '"' && s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, fmt.Errorf("a table header whose quoted key does not end")
			}
			key := s[1:end]
			if q == '"' {
				var v string
				if _, err := toml.Decode("k = "+s[:end+1], &struct {
					K *string `toml:"k"`
				}{&v}); err != nil {
					return nil, fmt.Errorf("a table header's key %s: %w", s[:end+1], err)
				}
				key = v
			}
			path = append(path, key)
			s = s[end+1:]
		default:
			k := bareKey.FindString(s)
			if k == "" {
				return nil, fmt.Errorf("a table header that cannot be read: %q", strings.TrimSpace(string(line[:min(len(line), 80)])))
			}
			path = append(path, k)
			s = s[len(k):]
		}
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, ".") {
			s = s[1:]
			continue
		}
		if strings.HasPrefix(s, "]") {
			return path, nil
		}
		return nil, fmt.Errorf("a table header that cannot be read: %q", strings.TrimSpace(string(line[:min(len(line), 80)])))
	}
}

// hasPrefix reports whether path begins with prefix.
func hasPrefix(path, prefix []string) bool {
	if len(path) < len(prefix) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}

// blankOrComment reports whether line holds only white space or a comment.
func blankOrComment(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) == 0 || t[0] == '#'
}

// tomlBlocks returns the byte ranges of the tables under prefix: from the
// comment lines right above the header to the last line with content,
// plus the blank lines after it.
func tomlBlocks(text []byte, hs []theader, prefix []string) [][2]int {
	var out [][2]int
	for i, h := range hs {
		if !hasPrefix(h.path, prefix) {
			continue
		}
		end := len(text)
		if i+1 < len(hs) {
			end = hs[i+1].start
		}
		// Back over trailing comments and blank lines: they are the next
		// table's (or the file's end's).
		lines := bytes.SplitAfter(text[h.start:end], []byte("\n"))
		last := 0
		for j, l := range lines {
			if j == 0 || !blankOrComment(l) {
				last = j
			}
		}
		e := h.start
		for _, l := range lines[:last+1] {
			e += len(l)
		}
		// ...but the blank lines right after it go with it.
		for _, l := range lines[last+1:] {
			if len(bytes.TrimSpace(l)) != 0 {
				break
			}
			e += len(l)
		}
		// Comment lines right above the header describe it.
		s := h.start
		for s > 0 {
			ps := bytes.LastIndexByte(text[:s-1], '\n') + 1
			l := bytes.TrimSpace(text[ps : s-1])
			if len(l) == 0 || l[0] != '#' || (i > 0 && ps < hs[i-1].start) {
				break
			}
			if i > 0 && hasPrefix(hs[i-1].path, prefix) {
				break // already in the previous block
			}
			s = ps
		}
		if n := len(out); n > 0 && out[n-1][1] >= s {
			out[n-1][1] = e
			continue
		}
		out = append(out, [2]int{s, e})
	}
	return out
}

// tomlKey writes key bare when it can be, else quoted.
func tomlKey(key string) string {
	if bareKey.FindString(key) == key && key != "" {
		return key
	}
	q, _ := marshal(key)
	return string(q)
}

// tomlValue writes a string or a []string as TOML (a JSON string is a
// TOML basic string).
func tomlValue(v any) string {
	switch v := v.(type) {
	case []string:
		var parts []string
		for _, s := range v {
			q, _ := marshal(s)
			parts = append(parts, string(q))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		q, _ := marshal(v)
		return string(q)
	}
}

// ttable is one table to write: its path and its key/value pairs.
type ttable struct {
	path []string
	keys ordered
}

func renderTables(ts []ttable) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString("\n")
		}
		var ks []string
		for _, p := range t.path {
			ks = append(ks, tomlKey(p))
		}
		fmt.Fprintf(&b, "[%s]\n", strings.Join(ks, "."))
		for _, e := range t.keys {
			fmt.Fprintf(&b, "%s = %s\n", tomlKey(e.k), tomlValue(e.v))
		}
	}
	return b.String()
}

// tomlSetServer returns text with server name's tables replaced by ts (or,
// when ts is nil, removed). New tables go at the end of the file.
func tomlSetServer(text []byte, name string, ts []ttable) ([]byte, error) {
	add := ""
	if ts != nil {
		add = renderTables(ts)
	}
	return tomlSetServerText(text, name, add)
}

// tomlServerText returns server name's tables in text as they are written
// there (the comment lines right above them too), or "".
func tomlServerText(text []byte, name string) (string, error) {
	hs, err := tomlHeaders(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, r := range tomlBlocks(text, hs, []string{"mcp_servers", name}) {
		b.Write(text[r[0]:r[1]])
	}
	if b.Len() == 0 {
		return "", nil
	}
	// The blank lines after them are the place's, not theirs.
	return strings.TrimRight(b.String(), "\r\n") + "\n", nil
}

// tomlSetServerText is tomlSetServer with the tables' text, add ("":
// removed).
func tomlSetServerText(text []byte, name, add string) ([]byte, error) {
	hs, err := tomlHeaders(text)
	if err != nil {
		return nil, err
	}
	prefix := []string{"mcp_servers", name}
	blocks := tomlBlocks(text, hs, prefix)
	out := text
	at := -1
	for i := len(blocks) - 1; i >= 0; i-- {
		out = splice(out, blocks[i][0], blocks[i][1], "")
		at = blocks[i][0]
	}
	if add == "" {
		// Tables taken from the end of the file take the blank lines
		// that separated them with them, as they were added.
		if n := len(blocks); n > 0 && blocks[n-1][1] == len(text) {
			eol := "\n"
			if bytes.HasSuffix(out, []byte("\r\n")) {
				eol = "\r\n"
			}
			if t := bytes.TrimRight(out, "\r\n"); len(t) > 0 {
				out = append(t[:len(t):len(t)], eol...)
			}
		}
		return out, nil
	}
	if at >= 0 {
		// In place of the old tables, separated from what follows.
		if at < len(out) {
			add += "\n"
		}
		return splice(out, at, at, add), nil
	}
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	if len(bytes.TrimSpace(out)) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
		out = append(out, '\n')
	}
	return append(out, add...), nil
}

// decodeTOML decodes text, naming the line of a parse error.
func decodeTOML(text []byte) (map[string]any, error) {
	doc := map[string]any{}
	if _, err := toml.Decode(string(text), &doc); err != nil {
		if pe, ok := err.(toml.ParseError); ok {
			return nil, fmt.Errorf("line %d: %s", pe.Position.Line, pe.Message)
		}
		return nil, err
	}
	return doc, nil
}
