package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnchanged: the same bytes pass; a longer, shorter, other, new or
// removed file fails naming the path; a file that cannot be read fails.
func TestUnchanged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("abc")
	if err := Unchanged(p, []byte("abc"), true, "while x ran"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cur string
		old       []byte
		existed   bool
	}{
		{"longer", "abcd", []byte("abc"), true},
		{"shorter", "ab", []byte("abc"), true},
		{"other", "abd", []byte("abc"), true},
		{"created", "", nil, false},
		{"emptied", "", []byte("abc"), true},
	} {
		write(tc.cur)
		err := Unchanged(p, tc.old, tc.existed, "while x ran")
		if err == nil || err.Error() != p+" changed while x ran; nothing was written: run it again" {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	write("")
	if err := Unchanged(p, []byte{}, true, "while x ran"); err != nil {
		t.Errorf("an empty file still empty: %v", err)
	}
	os.Remove(p)
	if err := Unchanged(p, nil, false, "while x ran"); err != nil {
		t.Errorf("still missing: %v", err)
	}
	if err := Unchanged(p, []byte("abc"), true, "while x ran"); err == nil || !strings.Contains(err.Error(), "changed while x ran") {
		t.Errorf("removed: %v", err)
	}
	// A directory in its place cannot be read as the file.
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Unchanged(p, []byte("abc"), true, "while x ran"); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a directory: %v", err)
	}
}
