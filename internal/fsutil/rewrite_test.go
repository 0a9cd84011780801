package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRewriteKeepsTheMode: a file a person made private stays private
// when rewritten; a missing one gets the mode asked for.
func TestRewriteKeepsTheMode(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "private.json")
	if err := os.WriteFile(private, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Rewrite(private, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.yml")
	if err := Rewrite(fresh, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{private: 0o600, fresh: 0o640} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(path), got, want)
		}
	}
}
