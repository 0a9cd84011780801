//go:build unix

package addserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/addserver"
)

// TestRemoveSkipsAnIncludedFIFO: an include glob that matches a FIFO (a
// hostile or mistaken composition.d) is named as not read, as the host
// refuses it; remove read it again with a blocking open and hung waiting
// for a writer that never came.
func TestRemoveSkipsAnIncludedFIFO(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "composition.yml")
	main := removeHead + removeTail + "include: [d/*]\n"
	if err := os.WriteFile(file, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "d", "pipe.yml")
	if err := os.Mkdir(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := addserver.RemoveText(t.Context(), file, "gh")
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		// Unblock the hung open so that no goroutine is left behind.
		if w, werr := os.OpenFile(fifo, os.O_WRONLY, 0); werr == nil {
			_ = w.Close()
		}
		<-done
		t.Fatal("remove hung reading the included FIFO")
	}
	if err == nil || !strings.Contains(err.Error(), fifo+" did not parse") {
		t.Errorf("remove gh: %v; want it to name %s as not read", err, fifo)
	}
}
