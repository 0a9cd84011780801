//go:build unix

package tokenfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRefusesAFIFO: a token file that is a FIFO (a shell's <(...), a
// path named by mistake) is refused as not a regular file at once, with or
// without a writer, instead of blocking the entry's start until one comes.
func TestReadRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	read := func() error {
		done := make(chan error, 1)
		go func() {
			_, err := Read(fifo)
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			// Open the writing end so that the blocked reader ends with
			// the test instead of outliving it.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatal("Read blocked on a FIFO nobody writes to")
			return nil
		}
	}
	want := "is not a regular file (a FIFO)"
	if err := read(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a FIFO without a writer: %v; want %q", err, want)
	}
	// With a writer holding it open (and a token written), it is refused
	// all the same: what a FIFO yields is not a file's content.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("s3cret-0123456789abcdef\n"); err != nil {
		t.Fatal(err)
	}
	if err := read(); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a FIFO with a writer: %v; want %q, without the token", err, want)
	}
}

// TestReadRefusesADevice: a device (here /dev/zero, which never ends) is
// refused before anything is read from it.
func TestReadRefusesADevice(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here:", err)
	}
	if _, err := Read("/dev/zero"); err == nil || !strings.Contains(err.Error(), "is not a regular file (a character device)") {
		t.Errorf("/dev/zero: %v; want it refused as a character device", err)
	}
}

// TestReadThroughASymlink: a symlink to a regular file (as Kubernetes
// mounts secrets) is read: the mode checked is the opened file's.
func TestReadThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token.real")
	if err := os.WriteFile(file, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "token")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(link); got != "tok" || err != nil {
		t.Errorf("Read(symlink) = %q, %v; want tok", got, err)
	}
}
