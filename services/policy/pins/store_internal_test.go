package pins

import (
	"fmt"
	"sync"
	"testing"
)

// TestPinStoreMergesWriters: two stores on one directory (two processes)
// trusting tools of one server at once lose none of each other's: every
// write takes the file's lock and merges into what is on disk.
func TestPinStoreMergesWriters(t *testing.T) {
	dir := t.TempDir()
	stores := []*pinStore{newPinStore(dir), newPinStore(dir)}
	const each = 25
	var wg sync.WaitGroup
	for w, s := range stores {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("w%d_%02d", w, i)
				if err := s.update("srv", func(f *pinFile) {
					f.Tools[name] = pinRecord{Digest: pinned{Name: name}.digest(), Tool: pinned{Name: name}}
				}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	f, err := newPinStore(dir).load("srv")
	if err != nil || f == nil {
		t.Fatalf("load: %v, %v", f, err)
	}
	if len(f.Tools) != 2*each {
		t.Errorf("%d tools pinned, want %d: a writer lost another's", len(f.Tools), 2*each)
	}
}
