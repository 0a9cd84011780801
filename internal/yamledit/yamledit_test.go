package yamledit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"
)

// node parses s as one YAML value.
func node(t *testing.T, s string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

func parse(t *testing.T, s string) File {
	t.Helper()
	f, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSet(t *testing.T) {
	tests := []struct {
		name, before, want string
		whole              bool
	}{
		{"replaces the section's lines only", "# head\na: 1 # one\n# about b\nb:\n  x: 1\n  # foot of b\n\n# about c\nc: 3\n", "# head\na: 1 # one\n# about b\nb:\n  y: 2\n  # foot of b\n\n# about c\nc: 3\n", false},
		{"appends a new section", "a: 1", "a: 1\nb:\n  y: 2\n", false},
		{"empty file", "", "b:\n  y: 2\n", false},
		{"keeps the file's indentation", "a:\n    x: 1\nb: 0\n", "a:\n    x: 1\nb:\n    y: 2\n", false},
		{"keeps CRLF", "a: 1\r\nb: 0\r\nc: 3\r\n", "a: 1\r\nb:\r\n  y: 2\r\nc: 3\r\n", false},
		{"flow top level is re-encoded", "{a: 1, b: 0}\n", "a: 1\nb:\n  y: 2\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, whole, err := parse(t, tt.before).Set("b", node(t, "y: 2"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(out)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if whole != tt.whole {
				t.Errorf("whole = %v, want %v", whole, tt.whole)
			}
		})
	}
}

// newItems are what Append adds in these tests: the first carries a head
// comment, the second a block scalar, whose lines must move right with the
// item.
func newItems(t *testing.T) []*yaml.Node {
	items := node(t, "- id: n1\n- id: n2\n  text: |\n    one\n\n    two\n").Content
	items[0].HeadComment = "added"
	return items
}

// added is newItems' text at column 1.
const added = "# added\n- id: n1\n- id: n2\n  text: |\n    one\n\n    two\n"

// shift indents every line of s that is not empty by lead.
func shift(s, lead string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString(lead)
		}
		b.WriteString(l)
	}
	return b.String()
}

func TestAppend(t *testing.T) {
	tests := []struct {
		name, before, want string
	}{
		{
			name:   "after the last item, before what follows",
			before: "# list\nplugins:\n  - id: a # first\n    name: x\n\n  # about other\nother: 1\n",
			want:   "# list\nplugins:\n  - id: a # first\n    name: x\n" + shift(added, "  ") + "\n  # about other\nother: 1\n",
		},
		{
			name:   "items at the key's column",
			before: "plugins:\n- id: a\nother: 1\n",
			want:   "plugins:\n- id: a\n" + added + "other: 1\n",
		},
		{
			name:   "list last, no final newline",
			before: "plugins:\n    - id: a",
			want:   "plugins:\n    - id: a\n" + shift(added, "    "),
		},
		{
			name:   "empty list",
			before: "# nothing yet\nplugins: # mine\nother: true\n",
			want:   "# nothing yet\nplugins: # mine\n" + shift(added, "  ") + "other: true\n",
		},
		{
			name:   "empty flow list",
			before: "plugins: []\n",
			want:   "plugins:\n" + shift(added, "  "),
		},
		{
			name:   "no key",
			before: "# just a comment\nother: true",
			want:   "# just a comment\nother: true\nplugins:\n" + shift(added, "  "),
		},
		{
			name:   "empty file",
			before: "",
			want:   "plugins:\n" + shift(added, "  "),
		},
		{
			name:   "CRLF",
			before: "plugins:\r\n  - id: a\r\nother: 1\r\n",
			want:   "plugins:\r\n  - id: a\r\n" + strings.ReplaceAll(shift(added, "  "), "\n", "\r\n") + "other: 1\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := parse(t, tt.before).Append("plugins", newItems(t))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(out)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendRefuses(t *testing.T) {
	tests := []struct{ name, before, wantErr string }{
		{"flow list", "plugins: [{id: a}]\n", "line 1: plugins is a flow list"},
		{"not a list", "other: 1\nplugins: {a: 1}\n", "line 2: plugins is not a list"},
		{"top level not a mapping", "- a\n", "line 1: the top level is not a mapping"},
		{"null document", "~\n", "line 1: the top level is not a mapping"},
		{"key inside a flow top level", "{plugins: [], b: 1}\n", "cannot add to plugins"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := parse(t, tt.before).Append("plugins", newItems(t))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Append = %q, %v; want an error with %q", out, err, tt.wantErr)
			}
		})
	}
}

func TestParseRefusesASecondDocument(t *testing.T) {
	if _, err := Parse([]byte("a: 1\n---\nb: 2\n")); err == nil || !strings.Contains(err.Error(), "line 2: a second YAML document") {
		t.Errorf("Parse = %v", err)
	}
}

func TestSameValue(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"{a: 1, b: [x]}", "b: [x]\na: 1\n", true},
		{"0x10", "16", true},
		{"1", "1.0", false},
		{"'1'", "1", false},
		{"[.nan, {k: .NaN}]", "[.NaN, {k: .nan}]", true},
		// NaN as a map key cannot be looked up; with several keys its
		// place in an encoding would change from run to run.
		{"{0, .nan, 000A}", "{000A, .nan, 0}", true},
		{"{.nan: 1}", "{.nan: 2}", false},
	}
	for _, tt := range tests {
		for range 20 { // map order differs between runs
			if err := SameValue(node(t, tt.a), node(t, tt.b)); (err == nil) != tt.same {
				t.Fatalf("SameValue(%s, %s) = %v, want same %v", tt.a, tt.b, err, tt.same)
			}
		}
	}
}

// FuzzAppend adds items to arbitrary files: Append either refuses, or
// returns a file that parses and holds every other key unchanged and the
// old list followed by the new items.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		"", "plugins:\n  - a\n", "plugins:\n- a\n# c\nb: 1\n", "plugins: []\n", "plugins: [a]\n", "a: &x [1]\nplugins: *x\n",
		"plugins:\n  - |\n    x\n  # foot\n...\n", "plugins:\n  - a\n---\nb: 1\n", "? [k]\n: v\nplugins:\n - 1\n", "plugins: !!seq\n- a\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		before, err := Parse([]byte(content))
		if err != nil {
			return
		}
		out, err := before.Append("plugins", newItems(t))
		if err != nil {
			return
		}
		after, err := Parse(out)
		if err != nil || after.top() == nil {
			t.Fatalf("Append wrote a file that does not parse (%v):\n%q\nfrom\n%q", err, out, content)
		}
		// Every other key keeps its place and value.
		others := func(f File) (pairs []*yaml.Node, list *yaml.Node) {
			if top := f.top(); top != nil {
				for i := 0; i+1 < len(top.Content); i += 2 {
					if k := top.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "plugins" {
						list = top.Content[i+1]
						continue
					}
					pairs = append(pairs, top.Content[i], top.Content[i+1])
				}
			}
			return pairs, list
		}
		was, oldList := others(before)
		now, _ := others(after)
		if len(was) != len(now) {
			t.Fatalf("%d keys became %d:\n%q\nfrom\n%q", len(was)/2, len(now)/2, out, content)
		}
		for i := range was {
			if SameValue(was[i], now[i]) != nil {
				t.Fatalf("key or value %d changed:\n%q\nfrom\n%q", i, out, content)
			}
		}
		var old []any
		if oldList != nil {
			oldList.Decode(&old)
		}
		var list []any
		_, v := after.lookup("plugins")
		if v == nil || v.Decode(&list) != nil || len(list) != len(old)+2 {
			t.Fatalf("the list reads back as %v:\n%q\nfrom\n%q", list, out, content)
		}
	})
}
