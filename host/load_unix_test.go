//go:build unix

package host

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIncludedFIFORefused: an include that names a FIFO is refused at
// once, without waiting for a writer that never comes (which would wedge
// every later reload, and check). (The main file may still be a pipe:
// cmd/dsh-host's TestCompositionFromAPipe.)
func TestIncludedFIFORefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "extra.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	main := filepath.Join(dir, "composition.yml")
	if err := os.WriteFile(main, []byte("plugins: []\ninclude: [extra.yml]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadComposition(main, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("an included FIFO: %v, want an error saying it is not a regular file", err)
		}
	case <-time.After(30 * time.Second): // a hang, not a speed
		// Release the read so that the goroutine ends with the test.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("reading the composition blocked on the included FIFO")
	}

}
