package settings

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"

	"github.com/dsh-host/dsh-host/internal/yamledit"
)

type nested struct {
	Theme string `yaml:"theme"`
	Font  *font  `yaml:"font,omitempty"`
	Tags  []tag  `yaml:"tags,omitempty"`
	Extra `yaml:",inline"`
}

type font struct {
	Size int `yaml:"size"`
}

type tag struct {
	Name string `yaml:"name"`
}

type Extra struct {
	Note string `yaml:"note,omitempty"`
}

func TestUpdateKeepsKeysTheTypeDoesNotKnow(t *testing.T) {
	tests := []struct {
		name, before, want string
		update             func(st *Store) error
	}{
		{
			name:   "struct keeps unknown keys in place",
			before: "ui:\n  future: {a: 1} # from a newer version\n  theme: dark\n  font:\n    size: 10\n    family: mono\n  tags:\n    - name: x\n      color: red\n",
			want:   "ui:\n  future: {a: 1} # from a newer version\n  theme: light\n  font:\n    size: 12\n    family: mono\n  tags:\n    - name: y\n      color: red\n  note: hi\n",
			update: func(st *Store) error {
				return Update(st, "ui", func(v *nested) error {
					v.Theme, v.Font.Size, v.Tags[0].Name, v.Note = "light", 12, "y", "hi"
					return nil
				})
			},
		},
		{
			name:   "zeroed omitempty field goes",
			before: "ui:\n  theme: dark\n  note: old # the note\n  font: {size: 3}\n",
			want:   "ui:\n  theme: dark\n",
			update: func(st *Store) error {
				return Update(st, "ui", func(v *nested) error { v.Note, v.Font = "", nil; return nil })
			},
		},
		{
			name:   "map key deleted by fn goes",
			before: "ids:\n  a: 1 # one\n  b: 2 # two\n",
			want:   "ids:\n  b: 2 # two\n  c: 3\n",
			update: func(st *Store) error {
				return Update(st, "ids", func(m *map[string]int) error {
					delete(*m, "a")
					(*m)["c"] = 3
					return nil
				})
			},
		},
		{
			name:   "any replaces the whole value",
			before: "free:\n  x: 1\n  y: 2\n",
			want:   "free:\n  x: 1\n",
			update: func(st *Store) error {
				return Update(st, "free", func(v *any) error {
					*v = map[string]any{"x": 1}
					return nil
				})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openAt(t, tt.before)
			if err := tt.update(st); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, readFile(t, st)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzUpdate updates one section of arbitrary files. Whatever the file, an
// Update either leaves it byte for byte as it was, or writes a file that
// parses, holds every other section with the same value, and holds the new
// value in the section.
func FuzzUpdate(f *testing.F) {
	for _, s := range []string{
		commented, "", "ui: 3\n", "ui:\n  theme: |\n    a\n    # b\nz: 1\n", "a: &x {theme: q}\nui: *x\n",
		"ui: &x\n  theme: q\nb: *x\n", "{ui: {theme: x}}", "ui:\n  theme: x\n...\n# after\n", "a: [1,\n  2]\nui:\n    theme: t\n    # foot\n\n# head of b\nb: 1\n",
		"ui:\n  - 1\n", "a: .nan\nui: {}\n", "a: [.NaN, {b: .nan}]\nui:\n  theme: .nan\n", "? [complex]\n: key\nui: {}\n", "ui: !!map {theme: x}\n", "ui:\n  theme: x\n  unknown: [1, 2]\n",
	} {
		f.Add(s, "new")
	}
	f.Fuzz(func(t *testing.T, content, theme string) {
		const path = "settings.yaml"
		before, err := parse(path, []byte(content))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("parse error %v is not a *ParseError", err)
			}
			return // Update refuses before it reads the section
		}
		after, changed, _, err := apply(path, before, "ui", func(u *nested) error { u.Theme = theme; u.Note = "fuzz"; return nil })
		if err != nil || !changed {
			return // refused, or nothing to do: Update writes nothing
		}
		g, err := parse(path, after)
		if err != nil {
			t.Fatalf("the update wrote a file that does not parse: %v\n%q\nfrom\n%q", err, after, content)
		}
		if before.top != nil {
			for i := 0; i+1 < len(before.top.Content); i += 2 {
				k := before.top.Content[i]
				if k.Kind != yaml.ScalarNode || k.Value == "ui" {
					continue
				}
				_, nv := g.section(k.Value)
				if nv == nil {
					t.Fatalf("section %q lost:\n%q\nfrom\n%q", k.Value, after, content)
				}
				if err := yamledit.SameValue(before.top.Content[i+1], nv); err != nil {
					t.Fatalf("section %q: %v:\n%q\nfrom\n%q", k.Value, err, after, content)
				}
			}
		}
		var v nested
		_, nv := g.section("ui")
		if nv == nil || nv.Decode(&v) != nil || v.Theme != theme || v.Note != "fuzz" {
			t.Fatalf("the section reads back as %+v:\n%q", v, after)
		}
	})
}
