package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entryPlaces lists "id file:line" for each entry of c, relative to dir.
func entryPlaces(t *testing.T, dir string, c *Composition) []string {
	t.Helper()
	var out []string
	for _, e := range c.Entries {
		rel, err := filepath.Rel(dir, e.File)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.ID+" "+rel+":"+strconv.Itoa(e.Line))
	}
	return out
}

// TestInclude reads a composition whose include list names a file and a
// glob: the main file's entries come first, then each file's, the files of
// the glob in name order, each entry knowing its file and line.
func TestInclude(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "composition.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "composition.yml")
	writeFile(t, main, "include: [extra.yml, composition.d/*.yml]\nplugins:\n  - {id: a, name: test-noop}\n")
	writeFile(t, filepath.Join(dir, "extra.yml"), "plugins:\n  - {id: x, name: test-noop}\n")
	writeFile(t, filepath.Join(dir, "composition.d", "b.yml"), "# b\nplugins:\n  - {id: b2, name: test-noop}\n")
	writeFile(t, filepath.Join(dir, "composition.d", "a.yml"), "plugins:\n  - {id: b1, name: test-noop}\n  - {id: b1b, name: test-noop}\n")
	writeFile(t, filepath.Join(dir, "composition.d", "notes.txt"), "not yaml: [")

	c, err := ReadComposition(main, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a composition.yml:3",
		"x extra.yml:2",
		"b1 composition.d/a.yml:2",
		"b1b composition.d/a.yml:3",
		"b2 composition.d/b.yml:3",
	}
	if diff := cmp.Diff(want, entryPlaces(t, dir, c)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if err := Check(c); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestIncludeErrors: every problem of an included file is reported with
// that file's name and line, and the rest of the composition still parses.
func TestIncludeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		main  string
		files map[string]string
		want  []string // substrings of the error, with DIR for the directory
	}{
		{
			name:  "an id defined in two files",
			main:  "include: [inc/*.yml]\nplugins:\n  - {id: a, name: test-noop}\n",
			files: map[string]string{"inc/x.yml": "plugins:\n  - {id: b, name: test-noop}\n  - {id: a, name: test-noop}\n"},
			want:  []string{`DIR/inc/x.yml:3: entry "a": duplicate id (first at DIR/composition.yml:3)`},
		},
		{
			name: "an id defined in two included files",
			main: "include: [inc/*.yml]\nplugins: []\n",
			files: map[string]string{
				"inc/x.yml": "plugins:\n  - {id: b, name: test-noop}\n",
				"inc/y.yml": "plugins:\n\n  - {id: b, name: test-noop}\n",
			},
			want: []string{`DIR/inc/y.yml:3: entry "b": duplicate id (first at DIR/inc/x.yml:2)`},
		},
		{
			name:  "include in an included file",
			main:  "include: [inc.yml]\nplugins: []\n",
			files: map[string]string{"inc.yml": "include: [more.yml]\nplugins: []\n"},
			want:  []string{"DIR/inc.yml:1: include is read from the main composition file only"},
		},
		{
			name:  "an included file without plugins",
			main:  "include: [inc.yml]\nplugins: []\n",
			files: map[string]string{"inc.yml": ""},
			want:  []string{`DIR/inc.yml: no "plugins" list`},
		},
		{
			name:  "bad YAML in an included file",
			main:  "include: [inc.yml]\nplugins: []\n",
			files: map[string]string{"inc.yml": "plugins:\n  - {id: a\n"},
			want:  []string{"DIR/inc.yml:"},
		},
		{
			name: "a missing file",
			main: "include:\n  - missing.yml\nplugins: []\n",
			want: []string{`DIR/composition.yml:2: include "missing.yml": no such file`},
		},
		{
			name: "a glob in a directory",
			main: "include: [\"*/a.yml\"]\nplugins: []\n",
			want: []string{`DIR/composition.yml:1: include "*/a.yml": a glob may stand only in the file name`},
		},
		{
			name: "include not a list",
			main: "include: inc.yml\nplugins: []\n",
			want: []string{"DIR/composition.yml:1: include must be a list of files or globs"},
		},
		{
			name:  "an unknown key in an included file",
			main:  "include: [inc.yml]\nplugins: []\n",
			files: map[string]string{"inc.yml": "plugins: []\nplugin: []\n"},
			want:  []string{`DIR/inc.yml:2: unknown top-level key "plugin"; a composition has "plugins"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, path, data)
			}
			main := filepath.Join(dir, "composition.yml")
			writeFile(t, main, tc.main)
			_, err := ReadComposition(main, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestIncludeGlobMatchingNothing: a glob that matches no file (an empty
// composition.d) is no error; a missing main file is fs.ErrNotExist.
func TestIncludeGlobMatchingNothing(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "composition.yml")
	writeFile(t, main, "include: [composition.d/*.yml]\nplugins:\n  - {id: a, name: test-noop}\n")
	c, err := ReadComposition(main, nil)
	if err != nil || len(c.Entries) != 1 {
		t.Errorf("ReadComposition = %+v, %v; want one entry", c, err)
	}
	if _, err := ReadComposition(filepath.Join(dir, "none.yml"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v; want fs.ErrNotExist", err)
	}
}

// TestWatchFollowsIncludes: an edit of an included file restarts its
// entry only; a file created where the glob matches starts its entries; a
// removed one disposes them; a broken one changes nothing.
func TestWatchFollowsIncludes(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "composition.d")
	if err := os.Mkdir(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "composition.yml")
	writeFile(t, filepath.Join(inc, "b.yml"), "plugins:\n  - {id: b, name: test-noop, config: {greeting: v1}}\n")
	writeFile(t, main, "include: [composition.d/*.yml]\nplugins:\n  - {id: a, name: test-noop}\n")
	h := newHost(t, nil)
	watch(t, h, main)
	rec.take()

	steps := []struct {
		name  string
		do    func()
		until func(ReloadStats) bool
		want  []string
	}{
		{"edit the included file", func() {
			writeFile(t, filepath.Join(inc, "b.yml"), "plugins:\n  - {id: b, name: test-noop, config: {greeting: v2}}\n")
		}, func(st ReloadStats) bool { return st.Applied == 2 }, []string{"dispose b", "apply b v2"}},
		{"create a file the glob matches", func() {
			writeFile(t, filepath.Join(inc, "c.yml"), "plugins:\n  - {id: c, name: test-noop}\n")
		}, func(st ReloadStats) bool { return st.Applied == 3 }, []string{"apply c hello"}},
		{"break an included file", func() {
			writeFile(t, filepath.Join(inc, "c.yml"), "plugins:\n  - {id: a, name: test-noop}\n")
		}, func(st ReloadStats) bool { return st.Failed == 1 }, nil},
		{"remove it", func() {
			if err := os.Remove(filepath.Join(inc, "c.yml")); err != nil {
				t.Fatal(err)
			}
		}, func(st ReloadStats) bool { return st.Applied == 4 }, []string{"dispose c"}},
	}
	for _, st := range steps {
		st.do()
		waitReloads(t, h, st.until)
		if diff := cmp.Diff(st.want, rec.take()); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", st.name, diff)
		}
	}
	if err := h.Reloads().LastError; err != nil {
		t.Errorf("last error: %v", err)
	}
}

// TestWatchIncludeDirectoryCreatedLater: an include glob whose directories
// do not exist yet does not stop the watch of the main file, and files
// created there once they exist are followed without a reload by hand (as
// `dsh-host import --write --dir` makes the directory and its files).
func TestWatchIncludeDirectoryCreatedLater(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "composition.yml")
	writeFile(t, main, "include: [conf/composition.d/*.yml]\nplugins:\n  - {id: a, name: test-noop}\n")
	h := newHost(t, nil)
	watch(t, h, main)
	rec.take()

	inc := filepath.Join(dir, "conf", "composition.d")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(inc, "b.yml"), "plugins:\n  - {id: b, name: test-noop}\n")
	waitReloads(t, h, func(st ReloadStats) bool { return st.Applied == 2 })
	if diff := cmp.Diff([]string{"apply b hello"}, rec.take()); diff != "" {
		t.Errorf("after the directory and its file were created (-want +got):\n%s", diff)
	}
	writeFile(t, filepath.Join(inc, "c.yml"), "plugins:\n  - {id: c, name: test-noop}\n")
	waitReloads(t, h, func(st ReloadStats) bool { return st.Applied == 3 })
	if diff := cmp.Diff([]string{"apply c hello"}, rec.take()); diff != "" {
		t.Errorf("after a file created in the new directory (-want +got):\n%s", diff)
	}
}
