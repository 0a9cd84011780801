package fsutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, content := range []string{"one", "two, longer", ""} {
		if err := WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Errorf("read %q, %v; want %q", got, err, content)
		}
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the file alone", len(ents))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil, 0o600); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

func TestMkdirAll(t *testing.T) {
	d := filepath.Join(t.TempDir(), "a", "b", "c")
	if err := MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(d, "file")
	os.WriteFile(f, nil, 0o600)
	if err := MkdirAll(f, 0o700); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("MkdirAll over a file: %v", err)
	}
}

// TestLockExcludes checks that Lock is exclusive between goroutines of one
// process (each Lock opens its own descriptor, and flock locks belong to
// descriptions).
func TestLockExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	var mu sync.Mutex
	inside := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				unlock, err := Lock(p)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				n := inside
				mu.Unlock()
				if n != 1 {
					t.Errorf("%d holders at once", n)
				}
				mu.Lock()
				inside--
				mu.Unlock()
				unlock()
			}
		})
	}
	wg.Wait()
}

func TestLockAcrossProcesses(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed")
	}
	p := filepath.Join(t.TempDir(), "l")
	unlock, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	// flock -n fails at once while this process holds the lock...
	if err := exec.Command("flock", "-n", p, "true").Run(); err == nil {
		t.Error("another process took the lock while it was held")
	}
	unlock()
	// ...and succeeds once it is released.
	if out, err := exec.Command("flock", "-n", p, "true").CombinedOutput(); err != nil {
		t.Errorf("lock not released: %v %s", err, out)
	}
}
