package settings

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type adapter struct {
	IDs      map[string]int `yaml:"ids,omitempty"`
	Disabled []string       `yaml:"disabled,omitempty"`
}

type ui struct {
	Theme string `yaml:"theme"`
	Width int    `yaml:"width,omitempty"`
}

func openAt(t *testing.T, content string) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if content != "" {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	st.debounce = 10 * time.Millisecond // tests wait on events, not on time
	return st
}

func readFile(t *testing.T, st *Store) string {
	t.Helper()
	b, err := os.ReadFile(st.Path())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const commented = `# dsh settings, edited by hand.
# Keep this header.

ui:
    theme: dark   # the theme
    width: 80


# The adapter's state: ids are never recycled.
mcp-adapter:
    # stable server ids
    ids:
        github: 1 # first
        web: 2
    disabled: [web]
    # trailing note in the section

# Something else entirely
other:
  - "quoted"
  - 'single'
  - {flow: map}
anchors:
  base: &b {x: 1}
  use: *b
# the end
`

func TestUpdateKeepsOtherSectionsByteForByte(t *testing.T) {
	tests := []struct {
		name    string
		section string
		update  func(st *Store) error
		// the file as it must read after the update
		want string
	}{
		{
			name: "scalar in the middle section",
			update: func(st *Store) error {
				return Update(st, "mcp-adapter", func(a *adapter) error { a.IDs["fs"] = 3; return nil })
			},
			want: strings.Replace(commented, "        web: 2\n", "        web: 2\n        fs: 3\n", 1),
		},
		{
			name: "first section",
			update: func(st *Store) error {
				return Update(st, "ui", func(u *ui) error { u.Theme = "light"; return nil })
			},
			want: strings.Replace(commented, "    theme: dark   # the theme\n", "    theme: light # the theme\n", 1),
		},
		{
			name: "new section is appended",
			update: func(st *Store) error {
				return Update(st, "zeta", func(u *ui) error { u.Theme = "x"; return nil })
			},
			want: commented + "zeta:\n    theme: x\n",
		},
		{
			name: "no change, no write",
			update: func(st *Store) error {
				return Update(st, "ui", func(u *ui) error { return nil })
			},
			want: commented,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openAt(t, commented)
			if err := tt.update(st); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, readFile(t, st)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdateEdgeShapes(t *testing.T) {
	tests := []struct {
		name, before, want string
		whole              bool // re-encoded whole, not spliced
	}{
		{"missing file", "", "ui:\n  theme: t\n", false},
		{"comments only", "# nothing yet\n", "# nothing yet\nui:\n  theme: t\n", false},
		{"no final newline", "a: 1", "a: 1\nui:\n  theme: t\n", false},
		{"no final newline, last section", "a: 1\nui:\n  theme: old", "a: 1\nui:\n  theme: t\n", false},
		{"null document", "~\n", "ui:\n  theme: t\n", true},
		{"empty section", "ui:\nb: 2\n", "ui:\n  theme: t\nb: 2\n", false},
		{"flow top level is re-encoded", "{a: 1, ui: {theme: x}}\n", "a: 1\nui: {theme: t}\n", true},
		{"document markers", "---\na: 1\nui:\n  theme: x\n...\n", "---\na: 1\nui:\n  theme: t\n...\n", false},
		{"CRLF", "a: 1\r\nui:\r\n  theme: x\r\n# c\r\nb: 2\r\n", "a: 1\r\nui:\r\n  theme: t\r\n# c\r\nb: 2\r\n", false},
		{"four-space indent kept", "a:\n    x: 1\nui:\n    theme: x\n    width: 3\n", "a:\n    x: 1\nui:\n    theme: t\n    width: 3\n", false},
		{"removed key takes its comment", "ui:\n  theme: x\n  # the width\n  width: 3\nz: 1\n", "ui:\n  theme: t\nz: 1\n", false},
		{"literal block kept", "ui:\n  theme: |\n    multi\n    line\nz: 1\n", "ui:\n  theme: t\nz: 1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openAt(t, tt.before)
			fn := func(u *ui) error {
				u.Theme = "t"
				if tt.name == "removed key takes its comment" {
					u.Width = 0
				}
				return nil
			}
			if f, err := parse("s", []byte(tt.before)); err == nil {
				if _, _, whole, _ := apply("s", f, "ui", fn); whole != tt.whole {
					t.Errorf("re-encoded whole: %v, want %v", whole, tt.whole)
				}
			}
			if err := Update(st, "ui", fn); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, readFile(t, st)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}
}

var discard = slog.New(slog.DiscardHandler)

func writeString(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

// TestReadTypeErrorNamesLine: a section whose value has the wrong type is an
// error that names the file and the line of the bad value.
func TestReadTypeErrorNamesLine(t *testing.T) {
	st := openAt(t, "other: 1\nui:\n  theme: dark\n  width: [1, 2]\n")
	_, _, err := Read[ui](st, "ui")
	want := st.Path() + `:4: section "ui": cannot unmarshal !!seq into int`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read = %v; want it to contain %q", err, want)
	}
}
