package host

import (
	"path/filepath"
	"testing"
)

// TestEntryPath: a relative path is the entry file's directory's; an
// absolute or empty one, or one of an entry no file holds (a built-in
// service, a composition built in code), is left as it is.
func TestEntryPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "composition.yml")
	for _, c := range []struct{ file, path, want string }{
		{file, "pins", filepath.Join(dir, "pins")},
		{file, "../up", filepath.Join(filepath.Dir(dir), "up")},
		{file, ".", dir},
		{file, "/abs/x", "/abs/x"},
		{file, "", ""},
		{"", "pins", "pins"},
		{builtinFile, "pins", "pins"},
	} {
		if got := EntryPath(c.file, c.path); got != c.want {
			t.Errorf("EntryPath(%q, %q) = %q, want %q", c.file, c.path, got, c.want)
		}
	}
}
