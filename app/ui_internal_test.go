//go:build unix

package app

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadBoundedFIFO: the Composition page of a host whose composition
// was a FIFO (a shell's <(...), read once by the load) says it is not
// shown, instead of waiting for a writer that never comes.
func TestReadBoundedFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "composition.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readBounded(fifo, compositionMax)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("a FIFO: %v; want it named as not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		// Open the writing end, so that the reader ends with the test.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("reading a FIFO nobody writes to blocked")
	}
}

// TestReadBounded: a file over the bound is shown up to it, and said so.
func TestReadBounded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if text, err := readBounded(file, 10); text != "0123456789" || err != nil {
		t.Errorf("at the bound: %q, %v", text, err)
	}
	if text, err := readBounded(file, 4); text != "0123" || err == nil {
		t.Errorf("over the bound: %q, %v; want its start and an error", text, err)
	}
}
